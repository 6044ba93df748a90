-- +goose Up
-- The identity version: a number that every commit changing what decides
-- access (a user's roles, grants, password, email or deletion, an API key,
-- a role) moves on, in its own transaction. Instances cache accounts with the version they were read
-- at, and a request authenticated from that cache reads the version in the
-- same statement as its data (docs/auth.md, "Accounts cached on
-- PostgreSQL"): a change made anywhere is seen by the very next request.
-- Inserts need no new version: no cached account can be one not yet
-- created. One row, so that reading it costs an index lookup.
CREATE TABLE identity_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint  NOT NULL
);

INSERT INTO identity_version (version) VALUES (0);

-- +goose StatementBegin
CREATE FUNCTION identity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE identity_version SET version = version + 1;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Only what decides access counts: a user's roles, direct grants, password
-- hash, email (what HTTP Basic names) and soft delete; a key's hash and
-- owner; any row of roles; and deletes. A change of a name or an age moves
-- nothing, so such writes do not queue behind one another on this row.
-- Deferred to the commit: the row lock on identity_version is held only
-- while the transaction commits, after every other lock it takes, so
-- writers that do move it wait for each other only that long, and never in
-- a cycle.
CREATE CONSTRAINT TRIGGER users_identity AFTER UPDATE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.roles IS DISTINCT FROM NEW.roles OR OLD.permissions IS DISTINCT FROM NEW.permissions
        OR OLD.password_hash IS DISTINCT FROM NEW.password_hash OR OLD.email_key IS DISTINCT FROM NEW.email_key
        OR OLD.deleted IS DISTINCT FROM NEW.deleted OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION identity_changed();
CREATE CONSTRAINT TRIGGER users_identity_delete AFTER DELETE ON users
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_changed();
CREATE CONSTRAINT TRIGGER api_keys_identity AFTER UPDATE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION identity_changed();
CREATE CONSTRAINT TRIGGER api_keys_identity_delete AFTER DELETE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_changed();
CREATE CONSTRAINT TRIGGER roles_identity AFTER INSERT OR UPDATE OR DELETE ON roles
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION identity_changed();
CREATE TRIGGER users_identity_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION identity_changed();
CREATE TRIGGER api_keys_identity_truncate AFTER TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION identity_changed();
CREATE TRIGGER roles_identity_truncate AFTER TRUNCATE ON roles
    FOR EACH STATEMENT EXECUTE FUNCTION identity_changed();

-- +goose Down
DROP TRIGGER roles_identity_truncate ON roles;
DROP TRIGGER api_keys_identity_truncate ON api_keys;
DROP TRIGGER users_identity_truncate ON users;
DROP TRIGGER roles_identity ON roles;
DROP TRIGGER api_keys_identity_delete ON api_keys;
DROP TRIGGER api_keys_identity ON api_keys;
DROP TRIGGER users_identity_delete ON users;
DROP TRIGGER users_identity ON users;
DROP FUNCTION identity_changed;
DROP TABLE identity_version;
