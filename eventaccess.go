package resourceapi

import (
	"context"
	"time"
)

// Who receives which event. Every door that hands events out (GraphQL
// subscriptions, Server-Sent Events, webhooks) asks the rule layer here,
// per event and per receiver, so that an event reaches exactly the callers
// who may read its record: the permission <resource>:read, or the record's
// ownership where the resource lets an owner read without it (Access.Self),
// and only the owner (or an admin) where its records are private. Hidden
// records record no event at all (see Resource.Hidden).

// EventFor returns ev as c may see it, and whether c may see it at all: c
// may read ev's record by the rules of reading it by id. The record is the
// one the event carries, its visible fields (the store records no others);
// a rule that shows a receiver fewer fields belongs here. An event whose
// record this version cannot read (a resource only a newer version
// declares) goes to admins only.
func (s *Service) EventFor(c *Caller, ev Event) (Event, bool) {
	res := ResourceNamed(ev.Resource)
	if res == nil || ev.Record == nil {
		return ev, c.IsAdmin()
	}
	a, err := s.permit(c, res, OpRead)
	if err != nil || res.HiddenFrom(c, ev.Record) {
		return Event{}, false
	}
	if err := s.check(c, res, OpRead, a, Address{}, ev.Record); err != nil {
		return Event{}, false
	}
	return ev, true
}

// SessionEvent returns ev as the caller of sess may see it now (EventFor),
// after confirming the session's credential as of since (when ev reached
// this process; see Confirm). It returns CodeInvalidToken, for good, once
// the credential is no longer valid (a stream then ends), and another
// error when the store cannot tell now.
func (s *Service) SessionEvent(ctx context.Context, sess *Session, since time.Time, ev Event) (Event, bool, error) {
	var out Event
	var ok bool
	err := s.confirmSession(ctx, sess, since, func(c *Caller) error {
		out, ok = s.EventFor(c, ev)
		return nil
	})
	return out, ok, err
}

// ConfirmSession confirms the credential of sess as of since, as Confirm
// does, without a resource: for a stream about to deliver events of
// several resources, each of which EventFor then decides.
func (s *Service) ConfirmSession(ctx context.Context, sess *Session, since time.Time) error {
	return s.confirmSession(ctx, sess, since, func(*Caller) error { return nil })
}
