-- +goose Up
-- A write that confirms its caller in its own transaction (docs/auth.md,
-- "Accounts cached on PostgreSQL"). A request authenticated from an
-- instance's accounts cache carries the identity version (00007) its
-- account was read at; a write sends this function, with that version,
-- in the same round trip as its COMMIT, and PostgreSQL runs the COMMIT only
-- if the function succeeds: when any user, API key or role that decides
-- access has changed since, it fails with SQLSTATE RA001, nothing of the
-- write commits, and the service authenticates the request again from the
-- database and runs the write again. So a write no longer reads its
-- caller's account in a transaction of its own first (one round trip, one
-- statement and one transaction less per write), and a credential still
-- ends on the very next request.
-- +goose StatementBegin
CREATE FUNCTION identity_confirm(want bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT version FROM identity_version) IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'the identity version moved from %', want USING ERRCODE = 'RA001';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION identity_confirm;
