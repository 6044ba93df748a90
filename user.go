package resourceapi

import (
	"crypto/rand"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Users is the declaration of the users resource.
var Users = NewResource(Resource{
	Name:       "users",
	Singular:   "user",
	SoftDelete: "deleted",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "name", Type: TypeString, Required: true, Sortable: true, Searchable: true,
			Normalize: trimSpace, Length: &Range{1, 100}, Check: oneLine},
		{Name: "email", Type: TypeString, Required: true, Unique: true, Sortable: true, Searchable: true,
			Normalize: trimSpace, Check: checkEmail},
		{Name: "age", Type: TypeInt, Nullable: true, Sortable: true, Range: &Range{0, 150}},
		{Name: "password", Type: TypeString, WriteOnly: true, Secret: SecretPassword, Nullable: true, Keep: true,
			Length: &Range{8, 1024}},
		// The caller's own password, confirming a change of their own
		// password or email (Confirm below).
		{Name: "current_password", Type: TypeString, WriteOnly: true, Transient: true, Length: &Range{1, 1024}},
		{Name: "roles", Type: TypeStrings, Keep: true, AdminOnly: true, Default: func() any { return []string{RoleUser} },
			Normalize: normalizeSet, Enum: RoleNames()},
		{Name: "permissions", Type: TypeStrings, Keep: true, AdminOnly: true, Default: func() any { return []string{} },
			Normalize: normalizeSet, Check: checkPermissions},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "deleted", Type: TypeBool, Keep: true, Default: func() any { return false }},
		// The security stamp: a random value that every credential issued
		// to the user carries (access tokens, refresh-token families,
		// authorization codes) and that is valid only while it is the
		// user's. A new one comes with every user created (so a user
		// created again at a deleted user's id shares nothing with them),
		// and with every change of the password, the email or the soft
		// delete, in the same write: each such change, and ending the
		// user's sessions (Service.EndSessions), ends every token and
		// session issued before it. API keys are credentials of their own
		// and are not stamped.
		{Name: "security_stamp", Type: TypeString, ReadOnly: true, WriteOnly: true, Computed: true,
			Default: func() any { return NewStamp() }, RenewedBy: []string{"password", "email", "deleted"}},
	},
	Retain: &Retain{Field: "roles", Value: RoleAdmin, Message: "The last admin cannot be removed, deleted or demoted"},
	// A user changes their own password or email only with their current
	// password: a stolen token or key, however short-lived, must not become
	// a permanent sign-in.
	Confirm: &Confirm{Fields: []string{"password", "email"}, With: "current_password"},
	// A user owns their own record: they may read and patch it without
	// users:read or users:write (not its roles or permissions, which only an
	// admin sets).
	Access: Access{Owner: "id", Self: []Op{OpRead, OpUpdate}},
	Events: map[Op]string{OpCreate: "userCreated"},
	Example: func(n int) Record {
		return Record{"name": "Ada Lovelace " + itoa(n), "email": "ada" + itoa(n) + "@example.com", "age": int64(36)}
	},
	Filters: []Filter{
		{Param: "status", Kind: FilterSoftDelete, Values: []string{StatusActive, StatusDeleted, StatusAll}, Default: StatusActive},
		{Param: "role", Kind: FilterContains, Field: "roles", Values: RoleNames()},
	},
})

// NewStamp returns a new security stamp: 130 random bits in base32.
func NewStamp() string { return rand.Text() }

// MaxEmailLength is the longest accepted email address, in bytes (RFC 5321).
const MaxEmailLength = 254

func trimSpace(v any) any { return strings.TrimSpace(v.(string)) }

// checkEmail accepts a bare RFC 5322 addr-spec (no display name, no angle
// brackets) of at most MaxEmailLength bytes with a non-empty domain.
func checkEmail(v any) string {
	s := v.(string)
	const msg = "must be a valid email address"
	if s == "" || len(s) > MaxEmailLength {
		return msg + " of at most 254 characters"
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return msg
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at == len(s)-1 {
		return msg
	}
	return ""
}

// normalizeSet sorts a list and drops duplicates: roles and permissions are
// sets.
func normalizeSet(v any) any {
	list := slices.Clone(v.([]string))
	slices.Sort(list)
	return slices.Compact(list)
}

func checkPermissions(v any) string {
	list := v.([]string)
	if len(list) > 64 {
		return "must hold at most 64 permissions"
	}
	for _, p := range list {
		if !Permission(p).Valid() {
			return "must be a list of <resource>:<action> permissions, with action read, write or delete"
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// oneLine refuses control characters: names and titles are shown to people,
// one line long.
func oneLine(v any) string {
	if strings.IndexFunc(v.(string), unicode.IsControl) >= 0 {
		return "must not contain control characters"
	}
	return ""
}
