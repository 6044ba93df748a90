package resourceapi

import (
	"crypto/rand"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Users is the declaration of the users resource.
var Users = NewResource(Resource{
	Name:       "users",
	Singular:   "user",
	SoftDelete: "deleted",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "name", Type: TypeString, Required: true, Sortable: true, Searchable: true,
			Normalize: normalizeLine, Length: &Range{1, 100}, Check: oneLine},
		// Emails are stored in NFC and unique by UniqueKey, so the two
		// spellings of josé@example.com (NFC and NFD) and any capitalization
		// of one address are one account.
		{Name: "email", Type: TypeString, Required: true, Unique: true, Sortable: true, Searchable: true,
			DecidesAccess: true, Normalize: normalizeLine, Check: checkEmail},
		{Name: "age", Type: TypeInt, Nullable: true, Sortable: true, Range: &Range{0, 150}},
		{Name: "password", Type: TypeString, WriteOnly: true, Secret: SecretPassword, Nullable: true, Keep: true,
			DecidesAccess: true, Length: &Range{8, 1024}},
		// The caller's own password, confirming a change of their own
		// password or email (Confirm below).
		{Name: "current_password", Type: TypeString, WriteOnly: true, Transient: true, Length: &Range{1, 1024}},
		{Name: "roles", Type: TypeStrings, Keep: true, AdminOnly: true, DecidesAccess: true, Default: func() any { return []string{RoleUser} },
			Normalize: normalizeSet, Enum: RoleNames()},
		{Name: "permissions", Type: TypeStrings, Keep: true, AdminOnly: true, DecidesAccess: true, Default: func() any { return []string{} },
			Normalize: normalizeSet, Check: checkPermissions},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "deleted", Type: TypeBool, Keep: true, Default: func() any { return false }},
		// service marks the user an OAuth client acts as with the
		// client_credentials grant (createServiceUser): shown only to admins.
		{Name: "service", Type: TypeBool, ReadOnly: true, Computed: true, Internal: true, Default: func() any { return false }},
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
		{Name: "security_stamp", Type: TypeString, ReadOnly: true, WriteOnly: true, Computed: true, DecidesAccess: true,
			Default: func() any { return NewStamp() }, RenewedBy: []string{"password", "email", "deleted"}},
	},
	Hidden: "service",
	Retain: &Retain{Field: "roles", Value: RoleAdmin, Message: "The last admin cannot be removed, deleted or demoted"},
	// A user changes their own password or email only with their current
	// password: a stolen token or key, however short-lived, must not become
	// a permanent sign-in.
	Confirm: &Confirm{Fields: []string{"password", "email"}, With: "current_password"},
	// A user owns their own record: they may read and patch it without
	// users:read or users:write (not its roles or permissions, which only an
	// admin sets).
	Access: Access{Owner: "id", Self: []Op{OpRead, OpUpdate}, Grants: map[string][]Action{RoleUser: {ActionRead}}},
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

// normalizeLine trims a line of text and puts it in Unicode Normalization
// Form C, so that text that looks the same and was typed differently (é as
// one code point or as e and a combining accent) is stored the same.
func normalizeLine(v any) any { return norm.NFC.String(strings.TrimSpace(v.(string))) }

// UniqueKey returns the key under which a unique string field is unique:
// its value in NFC, lower-cased. Two values with one key are the same to
// the store (CodeConflict), and lookups by such a field (sign-in by email)
// go by the key.
func UniqueKey(s string) string {
	return norm.NFC.String(strings.ToLower(norm.NFC.String(s)))
}

// checkEmail accepts a bare RFC 5322 addr-spec (no display name, no angle
// brackets) of at most MaxEmailLength bytes with a non-empty domain, without
// control or invisible characters (admin@localhost followed by U+200B is
// not admin@localhost, and must not pass for it).
func checkEmail(v any) string {
	s := v.(string)
	const msg = "must be a valid email address"
	if s == "" || len(s) > MaxEmailLength {
		return msg + " of at most 254 characters"
	}
	if r, ok := invisible(s, false); ok {
		return msg + ", without control or invisible characters (" + codePoint(r) + ")"
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
			return "must be a list of <resource>:<action> permissions, with action read, write or delete, or metrics:read"
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// oneLine refuses control and invisible characters: names and titles are
// shown to people, one line long, and must not pass for another name
// ("Administrator" with a zero-width space inside).
func oneLine(v any) string {
	if r, ok := invisible(v.(string), true); ok {
		return "must not contain control or invisible characters (" + codePoint(r) + ")"
	}
	return ""
}

// invisible returns the first character of s that a person cannot see or
// that changes how the text around it is shown: control characters (Cc),
// format characters (Cf: zero-width spaces, joiners and non-joiners,
// directional marks and overrides, the byte order mark, the word joiner,
// tags), line and paragraph separators (Zl, Zp). With joiners, U+200C ZERO
// WIDTH NON-JOINER and U+200D ZERO WIDTH JOINER are allowed right after a
// letter, mark or symbol outside ASCII, where writing needs them (Persian,
// the Indic scripts, emoji sequences); after ASCII they only hide.
func invisible(s string, joiners bool) (rune, bool) {
	prev := rune(-1)
	for _, r := range s {
		switch {
		case (r == '\u200c' || r == '\u200d') && joiners && prev > unicode.MaxASCII &&
			(unicode.IsLetter(prev) || unicode.IsMark(prev) || unicode.IsSymbol(prev)):
		case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			return r, true
		}
		prev = r
	}
	return 0, false
}

// codePoint formats r as U+XXXX.
func codePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }
