-- +goose Up
-- Service users, the users OAuth clients act as with the client_credentials
-- grant, are shown only to admins: users.service marks them (the rule
-- layer sets it when it creates a client), lists of anyone else filter
-- them out, and their totals subtract the count of this partial index from
-- row_counts.
ALTER TABLE users ADD COLUMN service INTEGER NOT NULL DEFAULT 0 CHECK (service IN (0, 1));
UPDATE users SET service = 1 WHERE id IN (SELECT user_id FROM oauth_clients);
CREATE INDEX users_service ON users (deleted) WHERE service = 1;

-- +goose Down
DROP INDEX users_service;
ALTER TABLE users DROP COLUMN service;
