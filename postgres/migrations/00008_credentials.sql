-- +goose Up
-- Credentials that end when they should (docs/auth.md, "How each credential
-- ends").

-- The security stamp of each user: every access token, authorization code
-- and refresh-token family carries the stamp of its user when it was
-- issued, and is valid only while it is still the user's. The store gives
-- every new user one and a new one with every change of the password, the
-- email or the soft delete, and with the end of the user's sessions (the
-- users field security_stamp). The default draws one for each existing row
-- (and for a row inserted by hand); families and codes take their user's,
-- so that nobody is signed out by the upgrade (access tokens issued before
-- it carry no stamp and are refused: clients refresh them).
ALTER TABLE users ADD COLUMN security_stamp text NOT NULL
    DEFAULT upper(replace(gen_random_uuid()::text, '-', ''));

ALTER TABLE oauth_refresh_families ADD COLUMN stamp text NOT NULL DEFAULT '';
UPDATE oauth_refresh_families f SET stamp = u.security_stamp FROM users u WHERE u.id = f.user_id;
ALTER TABLE oauth_codes ADD COLUMN stamp text NOT NULL DEFAULT '';
UPDATE oauth_codes c SET stamp = u.security_stamp FROM users u WHERE u.id = c.user_id;

-- A new stamp (the end of a user's sessions, which changes nothing else)
-- decides access like a new password: it moves the identity version
-- (00007), so that no instance serves a cached account with the old one.
CREATE CONSTRAINT TRIGGER users_identity_stamp AFTER UPDATE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.security_stamp IS DISTINCT FROM NEW.security_stamp)
    EXECUTE FUNCTION identity_changed();

-- When an API key stops working (null: never). Its change decides access:
-- it moves the identity version too.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
CREATE INDEX api_keys_expires_at ON api_keys (expires_at NULLS FIRST, id);
CREATE CONSTRAINT TRIGGER api_keys_identity_expiry AFTER UPDATE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION identity_changed();

-- Ids that deleted records held, by resource: a PUT does not give one to a
-- new record unless an admin makes it (sqlstore's Replace), so that an id
-- names one record for good. Filled by a trigger on each resource's table,
-- which catches every delete, those a cascade makes included.
CREATE TABLE retired_ids (
    resource text   NOT NULL,
    id       bigint NOT NULL,
    PRIMARY KEY (resource, id)
);

-- +goose StatementBegin
CREATE FUNCTION retire_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO retired_ids (resource, id) VALUES (TG_TABLE_NAME, OLD.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER users_retire AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER posts_retire AFTER DELETE ON posts FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER products_retire AFTER DELETE ON products FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER reviews_retire AFTER DELETE ON reviews FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER orders_retire AFTER DELETE ON orders FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER articles_retire AFTER DELETE ON articles FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER comments_retire AFTER DELETE ON comments FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER api_keys_retire AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION retire_id();
CREATE TRIGGER oauth_clients_retire AFTER DELETE ON oauth_clients FOR EACH ROW EXECUTE FUNCTION retire_id();

-- +goose Down
DROP TRIGGER oauth_clients_retire ON oauth_clients;
DROP TRIGGER api_keys_retire ON api_keys;
DROP TRIGGER comments_retire ON comments;
DROP TRIGGER articles_retire ON articles;
DROP TRIGGER orders_retire ON orders;
DROP TRIGGER reviews_retire ON reviews;
DROP TRIGGER products_retire ON products;
DROP TRIGGER posts_retire ON posts;
DROP TRIGGER users_retire ON users;
DROP FUNCTION retire_id;
DROP TABLE retired_ids;
DROP TRIGGER api_keys_identity_expiry ON api_keys;
DROP INDEX api_keys_expires_at;
ALTER TABLE api_keys DROP COLUMN expires_at;
DROP TRIGGER users_identity_stamp ON users;
ALTER TABLE oauth_codes DROP COLUMN stamp;
ALTER TABLE oauth_refresh_families DROP COLUMN stamp;
ALTER TABLE users DROP COLUMN security_stamp;
