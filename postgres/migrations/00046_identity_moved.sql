-- +goose Up
-- A write confirms its caller's identity version (00035) with a statement
-- that calls a function only when the version has moved (postgres/dialect.go,
-- ConfirmIdentity): SELECT identity_moved($1) WHERE (SELECT version FROM
-- identity_version) IS DISTINCT FROM $1. identity_confirm ran on every
-- confirmed write: a PL/pgSQL call, and its read of identity_version a query
-- through SPI with an executor of its own, inside the statement's own; the
-- statement now reads the row itself and the function, which only raises
-- RA001, runs when the write must fail (docs/performance.md, "pgtrig").
-- Same read, same snapshot rules, same error. identity_confirm stays for
-- instances of the earlier release while an upgrade runs.
-- +goose StatementBegin
CREATE FUNCTION identity_moved(want bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the identity version moved from %', want USING ERRCODE = 'RA001';
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION identity_moved;
