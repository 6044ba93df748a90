-- +goose Up
-- Credentials that end when they should (docs/auth.md, "How each credential
-- ends").

-- The security stamp of each user: every access token, authorization code
-- and refresh-token family carries the stamp of its user when it was
-- issued, and is valid only while it is still the user's. The store gives
-- every new user one and a new one with every change of the password, the
-- email or the soft delete, and with the end of the user's sessions (the
-- users field security_stamp). Existing users get one each here; their
-- families and codes take it, so that nobody is signed out by the upgrade
-- (access tokens issued before it carry no stamp and are refused: clients
-- refresh them). A row inserted by hand gets one from the trigger.
ALTER TABLE users ADD COLUMN security_stamp TEXT NOT NULL DEFAULT '';
UPDATE users SET security_stamp = upper(hex(randomblob(16)));

-- +goose StatementBegin
CREATE TRIGGER users_security_stamp AFTER INSERT ON users WHEN new.security_stamp = '' BEGIN
    UPDATE users SET security_stamp = upper(hex(randomblob(16))) WHERE id = new.id;
END;
-- +goose StatementEnd

ALTER TABLE oauth_refresh_families ADD COLUMN stamp TEXT NOT NULL DEFAULT '';
UPDATE oauth_refresh_families
    SET stamp = (SELECT u.security_stamp FROM users u WHERE u.id = oauth_refresh_families.user_id);
ALTER TABLE oauth_codes ADD COLUMN stamp TEXT NOT NULL DEFAULT '';
UPDATE oauth_codes SET stamp = (SELECT u.security_stamp FROM users u WHERE u.id = oauth_codes.user_id);

-- When an API key stops working (null: never), in Unix milliseconds, UTC.
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
CREATE INDEX api_keys_expires_at ON api_keys (expires_at, id);

-- Ids that deleted records held, by resource: a PUT does not give one to a
-- new record unless an admin makes it (sqlstore's Replace), so that an id
-- names one record for good. Filled by a trigger on each resource's table,
-- which catches every delete, those a cascade makes included.
CREATE TABLE retired_ids (
    resource TEXT    NOT NULL,
    id       INTEGER NOT NULL,
    PRIMARY KEY (resource, id)
) STRICT, WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER users_retire AFTER DELETE ON users BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('users', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER posts_retire AFTER DELETE ON posts BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('posts', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER products_retire AFTER DELETE ON products BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('products', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER reviews_retire AFTER DELETE ON reviews BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('reviews', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER orders_retire AFTER DELETE ON orders BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('orders', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER articles_retire AFTER DELETE ON articles BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('articles', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER comments_retire AFTER DELETE ON comments BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('comments', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER api_keys_retire AFTER DELETE ON api_keys BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('api_keys', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER oauth_clients_retire AFTER DELETE ON oauth_clients BEGIN
    INSERT INTO retired_ids (resource, id) VALUES ('oauth_clients', old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER oauth_clients_retire;
DROP TRIGGER api_keys_retire;
DROP TRIGGER comments_retire;
DROP TRIGGER articles_retire;
DROP TRIGGER orders_retire;
DROP TRIGGER reviews_retire;
DROP TRIGGER products_retire;
DROP TRIGGER posts_retire;
DROP TRIGGER users_retire;
DROP TABLE retired_ids;
DROP INDEX api_keys_expires_at;
ALTER TABLE api_keys DROP COLUMN expires_at;
ALTER TABLE oauth_codes DROP COLUMN stamp;
ALTER TABLE oauth_refresh_families DROP COLUMN stamp;
DROP TRIGGER users_security_stamp;
ALTER TABLE users DROP COLUMN security_stamp;
