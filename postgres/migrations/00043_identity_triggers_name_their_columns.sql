-- +goose Up
-- The identity triggers of an UPDATE (00007, 00008) name the columns their
-- WHEN compares. PostgreSQL reads a row trigger's WHEN from its text and
-- prepares it once for every UPDATE statement that may fire it; a trigger
-- with a column list is skipped without that when the UPDATE sets none of
-- its columns. So a PATCH of a user's age or name no longer prepares the two
-- WHEN clauses of users (about 7-10 microseconds of the backend's per UPDATE,
-- docs/performance.md, "lead"). A change that moves the identity version
-- sets one of the named columns (the service writes every column it changes,
-- email_key with email; no BEFORE trigger changes a row of these tables), so
-- the triggers fire exactly as before.
DROP TRIGGER users_identity ON users;
CREATE CONSTRAINT TRIGGER users_identity
    AFTER UPDATE OF roles, permissions, password_hash, email_key, deleted, id ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.roles IS DISTINCT FROM NEW.roles OR OLD.permissions IS DISTINCT FROM NEW.permissions
        OR OLD.password_hash IS DISTINCT FROM NEW.password_hash OR OLD.email_key IS DISTINCT FROM NEW.email_key
        OR OLD.deleted IS DISTINCT FROM NEW.deleted OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER users_identity_stamp ON users;
CREATE CONSTRAINT TRIGGER users_identity_stamp AFTER UPDATE OF security_stamp ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.security_stamp IS DISTINCT FROM NEW.security_stamp)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER api_keys_identity ON api_keys;
CREATE CONSTRAINT TRIGGER api_keys_identity AFTER UPDATE OF key_hash, user_id ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER api_keys_identity_expiry ON api_keys;
CREATE CONSTRAINT TRIGGER api_keys_identity_expiry AFTER UPDATE OF expires_at ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION identity_changed();

-- +goose Down
DROP TRIGGER users_identity ON users;
CREATE CONSTRAINT TRIGGER users_identity AFTER UPDATE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.roles IS DISTINCT FROM NEW.roles OR OLD.permissions IS DISTINCT FROM NEW.permissions
        OR OLD.password_hash IS DISTINCT FROM NEW.password_hash OR OLD.email_key IS DISTINCT FROM NEW.email_key
        OR OLD.deleted IS DISTINCT FROM NEW.deleted OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER users_identity_stamp ON users;
CREATE CONSTRAINT TRIGGER users_identity_stamp AFTER UPDATE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.security_stamp IS DISTINCT FROM NEW.security_stamp)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER api_keys_identity ON api_keys;
CREATE CONSTRAINT TRIGGER api_keys_identity AFTER UPDATE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION identity_changed();
DROP TRIGGER api_keys_identity_expiry ON api_keys;
CREATE CONSTRAINT TRIGGER api_keys_identity_expiry AFTER UPDATE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION identity_changed();
