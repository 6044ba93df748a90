package resourceapi

import "context"

// AuthorizeEvents checks that c may receive events of res at all: that c
// may read some of its records, by the permission <resource>:read or as the
// owner of records an owner may read (Access.Self, and the records of a
// Private resource). A stream of res's events that any caller may open
// (GraphQL's generated subscriptions) checks it before it starts; which
// events then reach c is EventFor's to decide, event by event.
func (s *Service) AuthorizeEvents(ctx context.Context, c *Caller, res *Resource) error {
	c, err := current(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.permit(c, res, OpRead)
	return err
}
