-- +goose Up
-- The ids POST assigns, one sequence per resource. PUT creates the ids its
-- client chooses and never moves them: AUTOINCREMENT went on after the
-- largest id ever inserted, so one PUT of 2^53-1 stopped every later POST.
-- The store skips ids a PUT has taken (sqlstore's create). An existing
-- database goes on counting where AUTOINCREMENT was.
CREATE TABLE sequences (
    resource TEXT    NOT NULL PRIMARY KEY,
    last     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO sequences (resource, last)
    SELECT name, seq FROM sqlite_sequence WHERE name = 'users';

-- +goose Down
DROP TABLE sequences;
