-- +goose Up
-- Service users, the users OAuth clients act as with the client_credentials
-- grant, are shown only to admins: users.service marks them (the rule
-- layer sets it when it creates a client), lists of anyone else filter
-- them out, and their totals subtract the count of this partial index from
-- row_counts.
ALTER TABLE users ADD COLUMN service boolean NOT NULL DEFAULT false;
UPDATE users SET service = true WHERE id IN (SELECT user_id FROM oauth_clients);
CREATE INDEX users_service ON users (deleted) WHERE service;

-- +goose Down
DROP INDEX users_service;
ALTER TABLE users DROP COLUMN service;
