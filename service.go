package resourceapi

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Service is the rule layer: every read and write of a resource, from any
// front door (REST, GraphQL, the command line), passes through it with the
// caller that makes it. It decides who may do what (the <resource>:<action>
// permission, what an owner may do without it, admin-only fields, records
// that only their owner may read or change), validates and normalizes
// records, fills computed fields, generates and hashes secrets, and hands the
// store a write whose record-dependent rules run inside the write
// transaction, together with the caller's own precondition (If-Match).
//
// Transports only translate: a request into a caller, a resource, an Address and
// a Record; the *Error this returns into their own format.
type Service struct {
	store  Store
	memos  MemoStore // store, when it keeps Memos
	hasher PasswordHasher
	// identity shares the reads of the identity version among the
	// sessions Confirm keeps current (session.go).
	identity identityWatch
	auth     Authenticator
	tracer   Tracer
	webhooks WebhookPolicy
	// retention is how long idempotency keys are kept, and claims the keys
	// of this process's idempotent writes under way (idempotency.go).
	retention time.Duration
	claims    claims
}

// NewService returns the rule layer over store. hasher hashes password
// fields; it is required once a resource declares one.
func NewService(store Store, hasher PasswordHasher) *Service {
	memos, _ := store.(MemoStore)
	return &Service{store: store, memos: memos, hasher: hasher}
}

// SetAuthenticator gives the service the Authenticator that checks the
// current passwords writes confirm with (Resource.Confirm), with the
// throttling of sign-ins. Call it before the service serves requests;
// without it, a write that sends a current password fails.
func (s *Service) SetAuthenticator(a Authenticator) { s.auth = a }

// Authenticator returns the Authenticator the service was given, for the
// doors that sign people in themselves (the OAuth server); nil without one.
func (s *Service) Authenticator() Authenticator { return s.auth }

// Store returns the store the service writes to, for the work that is not a
// resource operation (authentication's lookups).
func (s *Service) Store() Store { return s.store }

// Address names one record: its id and, on a nested path such as
// /users/{parent}/orders/{id}, the parent the record must belong to (0 when
// not nested).
type Address struct {
	ID     int64
	Parent int64
}

var errUnauthenticated = Errorf(CodeUnauthenticated, "Authentication required")

// ErrUnauthenticated returns the error of a request that needs a caller and
// has none, for the transports that refuse such a request before it reaches
// the Service.
func ErrUnauthenticated() error { return errUnauthenticated }

// allowed is the outcome of the permission check that does not need the
// stored record.
type allowed int

const (
	// byPermission: the caller holds the permission.
	byPermission allowed = iota + 1
	// ifOwner: the caller lacks the permission, but the record's owner may
	// perform the operation anyway (Access.Self): decided once the record is
	// known.
	ifOwner
)

// permit checks the permission of op on res. A caller without it may still
// act on records it owns when the resource lets owners (Access.Self); then
// the check on the record follows (owns).
func (s *Service) permit(c *Caller, res *Resource, op Op) (allowed, error) {
	if c == nil {
		return 0, errUnauthenticated
	}
	p := res.permission(op.Action())
	if c.Can(p) {
		return byPermission, nil
	}
	if res.Access.Owner != "" && res.Access.selfMay(op) && c.UserID != 0 {
		return ifOwner, nil
	}
	return 0, Errorf(CodeForbidden, "Permission denied: %s", p)
}

// check applies the rules that need the record as stored (cur), for op by c
// with the outcome a of permit: the record must belong to item's parent,
// and to the caller when only its owner may perform op.
func (s *Service) check(c *Caller, res *Resource, op Op, a allowed, item Address, cur Record) error {
	if cur == nil {
		return nil
	}
	if item.Parent != 0 && res.ParentOf(cur) != item.Parent {
		return ErrNotFound(res)
	}
	// The owner is read only when a rule needs it: reading the record's
	// fields is, for a GET of a cached record by an admin, a cache miss
	// that nothing else of the request pays (see Resource.HiddenFrom).
	onlyOwner := a == ifOwner
	restricted := res.Access.restricts(op) && !c.IsAdmin()
	if !onlyOwner && !restricted {
		return nil
	}
	owner := res.OwnerOf(cur)
	mine := owner != 0 && owner == c.UserID
	if onlyOwner && !mine {
		return Errorf(CodeForbidden, "Permission denied: %s", PermissionFor(res.Name, op.Action()))
	}
	if restricted && !mine {
		return Errorf(CodeForbidden, "Only the owner of this %s or an admin may %s it", res.Singular, op.verb())
	}
	return nil
}

func (o Op) verb() string {
	if o == OpRead {
		return "read"
	}
	if o == OpDelete {
		return "delete"
	}
	return "change"
}

// List returns one page of res's records matching q, within the parent's
// records when parent is not 0 (a nested collection). On a resource whose
// records are private, a caller who is not an admin sees only their own.
func (s *Service) List(ctx context.Context, c *Caller, res *Resource, parent int64, q ListQuery) (page Page, err error) {
	ctx, end := s.span(ctx, "List", res)
	defer func() { end(err) }()
	err = s.readConfirmed(ctx, c, func(ctx context.Context, c *Caller) error {
		page, err = s.list(ctx, c, res, parent, q)
		return err
	})
	return page, err
}

func (s *Service) list(ctx context.Context, c *Caller, res *Resource, parent int64, q ListQuery) (Page, error) {
	a, err := s.permit(c, res, OpRead)
	if err != nil {
		return Page{}, err
	}
	if err := q.Check(res); err != nil {
		return Page{}, err
	}
	if parent != 0 {
		if err := s.requireParent(ctx, c, res, parent); err != nil {
			return Page{}, err
		}
		q.Filters = append(q.Filters, FilterValue{Filter: res.parentFilter(), Value: parent})
	}
	if res.Hidden != "" && !c.IsAdmin() {
		q.Filters = append(q.Filters, FilterValue{Filter: res.hiddenFilter(), Value: false})
	}
	if (res.Access.Private || a == ifOwner) && !c.IsAdmin() {
		// Only the caller's own records: on a nested path of another user,
		// that is a refusal, not an empty page.
		if parent != 0 && res.parentIsOwner() && parent != c.UserID {
			return Page{}, Errorf(CodeForbidden, "Only the owner of these %s or an admin may read them", res.Name)
		}
		q.Filters = append(q.Filters, FilterValue{Filter: res.ownerFilter(), Value: c.UserID})
	}
	return s.store.List(ctx, res, q)
}

// requireParent fails with CodeNotFound when the parent of a nested path does
// not exist.
func (s *Service) requireParent(ctx context.Context, c *Caller, res *Resource, parent int64) error {
	p := res.ParentResource()
	if p == nil {
		return ErrNotFound(res)
	}
	if _, err := s.store.Get(ctx, p, parent); err != nil {
		return err
	}
	return nil
}

// Get returns one record.
func (s *Service) Get(ctx context.Context, c *Caller, res *Resource, item Address) (Record, error) {
	rec, _, err := s.GetMemo(ctx, c, res, item)
	return rec, err
}

// GetMemo is Get, and returns with the record the Memo its store keeps
// with it (MemoStore), nil when the store keeps none: a transport keeps its
// rendering there instead of rendering the same record on every read. The
// rules are Get's, checked on every call whatever the Memo holds.
func (s *Service) GetMemo(ctx context.Context, c *Caller, res *Resource, item Address) (rec Record, memo *Memo, err error) {
	ctx, end := s.span(ctx, "Get", res)
	defer func() { end(err) }()
	err = s.readConfirmed(ctx, c, func(ctx context.Context, c *Caller) error {
		rec, memo, err = s.get(ctx, c, res, item)
		return err
	})
	return rec, memo, err
}

func (s *Service) get(ctx context.Context, c *Caller, res *Resource, item Address) (Record, *Memo, error) {
	a, err := s.permit(c, res, OpRead)
	if err != nil {
		return nil, nil, err
	}
	var rec Record
	var memo *Memo
	if s.memos != nil {
		rec, memo, err = s.memos.GetMemo(ctx, res, item.ID)
	} else {
		rec, err = s.store.Get(ctx, res, item.ID)
	}
	if err != nil {
		return nil, nil, err
	}
	if res.HiddenFrom(c, rec) {
		return nil, nil, ErrNotFound(res)
	}
	if err := s.check(c, res, OpRead, a, item, rec); err != nil {
		return nil, nil, err
	}
	return rec, memo, nil
}

// prepareCreate validates rec as a new record of res created by c (a
// companion record, which the store creates with the record that needs it),
// and applies internal values the rule layer sets itself.
func (s *Service) prepareCreate(ctx context.Context, c *Caller, res *Resource, rec, internal Record) error {
	if _, err := s.permit(c, res, OpCreate); err != nil {
		return err
	}
	if err := s.prepare(c, res, rec, ModeCreate); err != nil {
		return err
	}
	dropTransient(res, rec)
	if err := s.lookup(ctx, res, rec); err != nil {
		return err
	}
	if _, err := s.generate(res, rec); err != nil {
		return err
	}
	if err := s.finish(res, rec); err != nil {
		return err
	}
	for name, v := range internal {
		rec[name] = v
	}
	return nil
}

// Create validates rec and stores it as a new record of res, within the
// parent's records when parent is not 0. The record returned carries, once,
// the plain value of every secret the service generated for it (an API key).
// When ctx carries an Idempotency (WithIdempotency), the write happens once
// per key: a key used already returns its Outcome (a *Replay, or
// CodeUnprocessable) and writes nothing.
func (s *Service) Create(ctx context.Context, c *Caller, res *Resource, parent int64, rec Record) (out Record, err error) {
	ctx, end := s.span(ctx, "Create", res)
	defer func() { end(err) }()
	err = s.writeAs(ctx, c, rec, func(ctx context.Context, c *Caller, rec Record) (err error) {
		out, err = s.create(ctx, c, res, parent, rec)
		return err
	})
	return out, err
}

// create is Create as c, whom writeAs confirms.
func (s *Service) create(ctx context.Context, c *Caller, res *Resource, parent int64, rec Record) (Record, error) {
	if _, err := s.permit(c, res, OpCreate); err != nil {
		return nil, err
	}
	ctx, release, err := s.idempotent(ctx, c)
	defer release()
	if err != nil {
		return nil, err
	}
	if parent != 0 {
		if err := s.setParent(res, rec, parent); err != nil {
			return nil, err
		}
	}
	if err := s.prepare(c, res, rec, ModeCreate); err != nil {
		return nil, err
	}
	dropTransient(res, rec)
	if err := s.lookup(ctx, res, rec); err != nil {
		return nil, err
	}
	generated, err := s.generate(res, rec)
	if err != nil {
		return nil, err
	}
	var before []Prerequisite
	if res.Companion != nil {
		p, internal := res.Companion(rec)
		if err := s.prepareCreate(ctx, SystemCaller(), p.Resource, p.Record, internal); err != nil {
			return nil, err
		}
		before = append(before, p)
	}
	if err = s.finish(res, rec); err != nil {
		return nil, err
	}
	out, err := s.store.Create(WithActor(ctx, c), res, rec, before...)
	if err != nil {
		if parent != 0 && isReferenceError(err, res.Parent) {
			return nil, ErrNotFound(res.ParentResource())
		}
		return nil, err
	}
	if len(generated) > 0 {
		out = out.Clone()
		for name, v := range generated {
			out[name] = v
		}
	}
	return out, nil
}

// CreateFirst creates rec, which must hold res's Retain value (the first
// admin), only when no active record holds it, and reports whether it did;
// the store checks and creates in one transaction. The store must implement
// FirstCreator.
func (s *Service) CreateFirst(ctx context.Context, c *Caller, res *Resource, rec Record) (_ Record, created bool, _ error) {
	fc, ok := s.store.(FirstCreator)
	if !ok {
		return nil, false, fmt.Errorf("create first %s: the store cannot", res.Singular)
	}
	c, err := current(ctx, c)
	if err != nil {
		return nil, false, err
	}
	if _, err := s.permit(c, res, OpCreate); err != nil {
		return nil, false, err
	}
	if err := s.prepare(c, res, rec, ModeCreate); err != nil {
		return nil, false, err
	}
	dropTransient(res, rec)
	if err := s.finish(res, rec); err != nil {
		return nil, false, err
	}
	return fc.CreateFirst(WithActor(ctx, c), res, rec)
}

// Replace overwrites record item.ID with rec, or creates it with that id
// (created is then true). cond, when not nil, is the caller's own
// precondition (If-Match), checked inside the write transaction after the
// rules.
func (s *Service) Replace(ctx context.Context, c *Caller, res *Resource, item Address, rec Record, cond Condition) (_ Record, created bool, err error) {
	ctx, end := s.span(ctx, "Replace", res)
	defer func() { end(err) }()
	c, err = current(ctx, c)
	if err != nil {
		return nil, false, err
	}
	a, err := s.permit(c, res, OpReplace)
	if err != nil {
		return nil, false, err
	}
	if item.Parent != 0 {
		if err := s.setParent(res, rec, item.Parent); err != nil {
			return nil, false, err
		}
	}
	if err := s.prepare(c, res, rec, ModeReplace); err != nil {
		return nil, false, err
	}
	confirmed, err := s.confirm(ctx, c, res, rec)
	if err != nil {
		return nil, false, err
	}
	if err := s.lookup(ctx, res, rec); err != nil {
		return nil, false, err
	}
	if err := s.finish(res, rec); err != nil {
		return nil, false, err
	}
	s.renew(res, rec)
	if c.IsAdmin() {
		// Only an admin may give a new record an id a deleted one held
		// (see Store.Replace); anyone else creates at fresh ids only.
		ctx = WithIDReuse(ctx)
	}
	return s.store.Replace(WithActor(ctx, c), res, item.ID, rec, s.guard(c, res, OpReplace, a, item, cond, rec, confirmed))
}

// Update changes the fields present in patch of record item.ID. cond is as
// for Replace; an Idempotency in ctx is as for Create.
func (s *Service) Update(ctx context.Context, c *Caller, res *Resource, item Address, patch Record, cond Condition) (out Record, err error) {
	ctx, end := s.span(ctx, "Update", res)
	defer func() { end(err) }()
	err = s.writeAs(ctx, c, patch, func(ctx context.Context, c *Caller, patch Record) (err error) {
		out, err = s.update(ctx, c, res, item, patch, cond)
		return err
	})
	return out, err
}

// update is Update as c, whom writeAs confirms.
func (s *Service) update(ctx context.Context, c *Caller, res *Resource, item Address, patch Record, cond Condition) (Record, error) {
	a, err := s.permit(c, res, OpUpdate)
	if err != nil {
		return nil, err
	}
	ctx, release, err := s.idempotent(ctx, c)
	defer release()
	if err != nil {
		return nil, err
	}
	if err := s.prepare(c, res, patch, ModePatch); err != nil {
		return nil, err
	}
	confirmed, err := s.confirm(ctx, c, res, patch)
	if err != nil {
		return nil, err
	}
	if err := s.lookup(ctx, res, patch); err != nil {
		return nil, err
	}
	if err := s.finish(res, patch); err != nil {
		return nil, err
	}
	s.renew(res, patch)
	return s.store.Update(WithActor(ctx, c), res, item.ID, patch, s.guard(c, res, OpUpdate, a, item, cond, patch, confirmed))
}

// Delete removes record item.ID and everything that belongs to it. cond is as
// for Replace.
func (s *Service) Delete(ctx context.Context, c *Caller, res *Resource, item Address, cond Condition) (err error) {
	ctx, end := s.span(ctx, "Delete", res)
	defer func() { end(err) }()
	c, err = current(ctx, c)
	if err != nil {
		return err
	}
	a, err := s.permit(c, res, OpDelete)
	if err != nil {
		return err
	}
	return s.store.Delete(WithActor(ctx, c), res, item.ID, s.guard(c, res, OpDelete, a, item, cond, nil, false))
}

// guard returns the precondition the store checks inside the write
// transaction against the record as it is then: the rules that need it, then
// the caller's own cond. A replace that creates (no current record) needs
// only the caller's cond: who may create was decided before, and prepare
// made the new record the caller's own unless the caller is an admin. rec is
// what the write sets, and confirmed whether it carried the caller's current
// password, rightly (confirm): a change of the caller's own record that
// Resource.Confirm lists needs it, which only the stored record tells.
func (s *Service) guard(c *Caller, res *Resource, op Op, a allowed, item Address, cond Condition, rec Record, confirmed bool) Condition {
	return func(cur Record) error {
		if cur == nil && a == ifOwner && op != OpReplace || res.HiddenFrom(c, cur) {
			return ErrNotFound(res)
		}
		if cur == nil && op == OpReplace && !res.CreatableByPut() {
			return Errorf(CodeNotFound, "%s not found; a new %s is created with POST, which generates its secrets",
				capitalize(res.Singular), res.Singular)
		}
		if err := s.check(c, res, op, a, item, cur); err != nil {
			return err
		}
		if cf := res.Confirm; cf != nil && cur != nil && !confirmed && c.UserID != 0 &&
			res.OwnerOf(cur) == c.UserID && res.Changes(cur, rec, cf.Fields) {
			return confirmError(cf, "is required to change your own "+strings.Join(cf.Fields, " or "))
		}
		if cond != nil {
			return cond(cur)
		}
		return nil
	}
}

// confirm takes the Transient fields out of rec (nothing stores them) and,
// when res declares Confirm and rec carries its current password, checks it
// against the caller's own: true when it is right. A wrong one, like any
// failed password, counts against the caller's sign-in throttle; throttled,
// it is CodeRateLimited. Whether the write needed it is for guard to say.
func (s *Service) confirm(ctx context.Context, c *Caller, res *Resource, rec Record) (bool, error) {
	var given any
	var sent bool
	if cf := res.Confirm; cf != nil {
		given, sent = rec[cf.With]
	}
	dropTransient(res, rec)
	password, _ := given.(string)
	if !sent || password == "" {
		return false, nil
	}
	wrong := confirmError(res.Confirm, "is not your current password")
	if c.UserID == 0 {
		return false, wrong // the command line signs in as no one
	}
	if s.auth == nil {
		return false, fmt.Errorf("confirm %s: the service has no authenticator to check passwords", res.Confirm.With)
	}
	switch err := s.auth.ConfirmPassword(ctx, c.UserID, password); ErrorCode(err) {
	case "":
		return true, nil
	case CodeInvalidToken, CodeNotFound:
		return false, wrong
	default:
		return false, err
	}
}

// dropTransient takes the Transient fields out of rec: they are for the
// rule layer to check, and nothing stores them.
func dropTransient(res *Resource, rec Record) {
	for _, f := range res.Fields {
		if f.Transient {
			delete(rec, f.Name)
		}
	}
}

// confirmError is the error of a missing or wrong current password: a
// validation error, with msg about the field that carries it.
func confirmError(cf *Confirm, msg string) error {
	return &Error{Code: CodeValidation,
		Message: "Changing your own " + strings.Join(cf.Fields, " or ") + " needs your current password in " + cf.With,
		Details: []FieldError{{Field: cf.With, Message: msg}}}
}

// renew gives the fields that a change renews (Field.RenewedBy) a new value
// in rec, the record of a validated write: at once when rec sets a secret
// that renews them (a password), else, when rec sets other fields that do,
// if the write changes one of them (IfChanged: only the store, inside the
// write, can tell).
func (s *Service) renew(res *Resource, rec Record) {
	for i := range res.Fields {
		f := &res.Fields[i]
		if len(f.RenewedBy) == 0 {
			continue
		}
		secret := false
		var sent []string
		for _, name := range f.RenewedBy {
			if _, ok := rec[name]; !ok {
				continue
			}
			if res.fields[name].WriteOnly {
				secret = true
			} else {
				sent = append(sent, name)
			}
		}
		switch {
		case secret:
			rec[f.Name] = f.Default()
		case len(sent) > 0:
			rec[f.Name] = IfChanged{Fields: sent, Value: f.Default()}
		}
	}
}

// EndSessions ends every session of user id at once, on every instance:
// its refresh tokens (of every client), the authorization codes not yet
// exchanged, and the access tokens already issued, by renewing the user's
// security stamp (see the users field security_stamp). API keys are not
// sessions and stay. The user themself or an admin may; anyone else gets
// CodeForbidden, and an unknown id (to an admin) CodeNotFound.
func (s *Service) EndSessions(ctx context.Context, c *Caller, id int64) error {
	c, err := current(ctx, c)
	if err != nil {
		return err
	}
	if c == nil {
		return errUnauthenticated
	}
	if c.UserID != id && !c.IsAdmin() {
		return Errorf(CodeForbidden, "Only the user or an admin may end a user's sessions")
	}
	rec := Record{}
	for _, f := range Users.Fields {
		if len(f.RenewedBy) > 0 {
			rec[f.Name] = f.Default()
		}
	}
	_, err = s.store.Update(WithActor(ctx, c), Users, id, rec, nil)
	return err
}

// setParent puts the parent id of a nested path into rec: the path names
// the parent, and a body that names another is refused.
func (s *Service) setParent(res *Resource, rec Record, parent int64) error {
	if res.Parent == "" {
		return ErrNotFound(res)
	}
	if v, ok := rec[res.Parent]; ok && v != parent {
		if n, isInt := v.(int64); !isInt || n != parent {
			rec[res.Parent] = invalidValue{"does not match the " + res.ParentResource().Singular + " in the path"}
			return nil
		}
	}
	rec[res.Parent] = parent
	return nil
}

// prepare authorizes the fields a write sets, fills in the owner of a new
// record, and validates and normalizes the record.
func (s *Service) prepare(c *Caller, res *Resource, rec Record, mode WriteMode) error {
	if err := res.authorizeFields(c, rec); err != nil {
		return err
	}
	owner := res.Access.Owner
	if owner == "id" {
		owner = ""
	}
	if v, sent := rec[owner]; owner != "" && sent && !c.IsAdmin() {
		if id, ok := v.(int64); ok && id != c.UserID {
			return Errorf(CodeForbidden, "Only an admin may set %s to another user", owner)
		}
	}
	_, sent := rec[owner]
	if err := Validate(res, rec, mode); err != nil {
		return err
	}
	// A new record without an owner is the caller's; a PUT that names none
	// keeps the stored owner.
	if owner != "" && !sent && c.UserID != 0 {
		switch mode {
		case ModeCreate:
			rec[owner] = c.UserID
		case ModeReplace:
			rec[owner] = IfCreated{c.UserID}
		}
	}
	return nil
}

// lookup fills the item fields that copy a value from another record (an
// order item's unit price from its product), reading those records. An item
// that names no record is CodeUnprocessable, with a detail for it.
func (s *Service) lookup(ctx context.Context, res *Resource, rec Record) error {
	var details []FieldError
	for _, f := range res.Fields {
		items, ok := rec[f.Name].([]Record)
		if f.Items == nil || !ok {
			continue
		}
		for _, sub := range f.Items.Fields {
			l := sub.Lookup
			if l == nil {
				continue
			}
			from := ResourceNamed(l.Resource)
			seen := map[int64]any{}
			for i, item := range items {
				id, _ := item[l.By].(int64)
				v, ok := seen[id]
				if !ok {
					ref, err := s.store.Get(ctx, from, id)
					if ErrorCode(err) == CodeNotFound {
						details = append(details, FieldError{Field: fmt.Sprintf("%s[%d].%s", f.Name, i, l.By),
							Message: fmt.Sprintf("no %s has id %d", from.Singular, id)})
						continue
					}
					if err != nil {
						return err
					}
					v = ref[l.Field]
					seen[id] = v
				}
				item[sub.Name] = v
			}
		}
	}
	if len(details) > 0 {
		return &Error{Code: CodeUnprocessable, Message: "The request names records that do not exist", Details: details}
	}
	return nil
}

// generate creates the values of generated fields on create and returns
// the plain values of the secrets among them, to be shown once.
func (s *Service) generate(res *Resource, rec Record) (map[string]string, error) {
	var out map[string]string
	for _, f := range res.Fields {
		if f.Generate == nil {
			continue
		}
		v, err := f.Generate(rec)
		if err != nil {
			return nil, fmt.Errorf("generate %s: %w", f.Name, err)
		}
		if v == "" {
			continue
		}
		rec[f.Name] = v
		if f.Secret == NotSecret {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[f.Name] = v
	}
	return out, nil
}

// finish computes the computed fields and hashes the secrets of a validated
// record, so that what reaches the store is complete and holds no plain
// secret.
func (s *Service) finish(res *Resource, rec Record) error {
	if res.Compute != nil {
		res.Compute(rec)
	}
	for _, f := range res.Fields {
		v, ok := rec[f.Name].(string)
		if !ok {
			continue
		}
		switch f.Secret {
		case SecretPassword:
			if s.hasher == nil {
				return fmt.Errorf("hash %s: no password hasher configured", f.Name)
			}
			h, err := s.hasher.Hash(v)
			if err != nil {
				return fmt.Errorf("hash %s: %w", f.Name, err)
			}
			rec[f.Name] = h
		case SecretToken:
			rec[f.Name] = HashToken(v)
		}
	}
	return nil
}

// ErrNotFound returns the error of an id that names no record of res.
func ErrNotFound(res *Resource) error {
	return Errorf(CodeNotFound, "%s not found", capitalize(res.Singular))
}

// capitalize upper-cases the first letter of an ASCII word, for messages.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// isReferenceError reports whether err is the store's refusal of a value of
// field that names no record (a foreign key with nothing to point at).
func isReferenceError(err error, field string) bool {
	e, ok := err.(*Error)
	if !ok {
		e = ErrorOf(err)
	}
	if e.Code != CodeUnprocessable {
		return false
	}
	for _, d := range e.Details {
		if d.Field == field {
			return true
		}
	}
	return false
}

// RequireAdmin returns nil when c is an admin, CodeUnauthenticated without a
// caller, and CodeForbidden "Admin access required" for anyone else: the rule
// of what only administrators may see (GraphQL's adminData).
func (s *Service) RequireAdmin(ctx context.Context, c *Caller) error {
	c, err := current(ctx, c)
	if err != nil {
		return err
	}
	if c == nil {
		return errUnauthenticated
	}
	if !c.IsAdmin() {
		return Errorf(CodeForbidden, "Admin access required")
	}
	return nil
}

// Authorize returns nil when c may perform op on every record of res: it
// holds the permission, and is an admin where only a record's owner may (a
// private resource). Otherwise it returns the error the operation would
// (CodeUnauthenticated without a caller, CodeForbidden). It is for what acts
// on records not yet written, such as a subscription to the events of
// records created later.
func (s *Service) Authorize(ctx context.Context, c *Caller, res *Resource, op Op) error {
	c, err := current(ctx, c)
	if err != nil {
		return err
	}
	a, err := s.permit(c, res, op)
	if err != nil {
		return err
	}
	if a != byPermission {
		return Errorf(CodeForbidden, "Permission denied: %s", PermissionFor(res.Name, op.Action()))
	}
	if res.Access.restricts(op) && !c.IsAdmin() {
		return Errorf(CodeForbidden, "Only the owner of a %s or an admin may %s it", res.Singular, op.verb())
	}
	return nil
}

// Permit returns nil when c holds p (an admin holds every permission), such
// as MetricsRead, a permission on something other than a resource;
// CodeUnauthenticated without a caller, else CodeForbidden.
func (s *Service) Permit(ctx context.Context, c *Caller, p Permission) error {
	c, err := current(ctx, c)
	if err != nil {
		return err
	}
	if c == nil {
		return errUnauthenticated
	}
	if !c.Can(p) && !c.IsAdmin() {
		return Errorf(CodeForbidden, "Permission denied: %s", p)
	}
	return nil
}
