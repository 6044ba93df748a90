package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/resourceapi/resourceapi"
)

var (
	_ resourceapi.OAuthStore   = (*Store)(nil)
	_ resourceapi.SettingStore = (*Store)(nil)
)

// The authorization server's state lives in oauth_codes, oauth_refresh_tokens
// and oauth_refresh_families (see the 00004 migrations for why families have
// a table of their own). Every decision that must hold under concurrency (a
// code is exchanged once, a refresh token rotated once) is one conditional
// UPDATE, which both databases run atomically: on SQLite because one writer
// runs every write, on PostgreSQL because the row lock makes a second UPDATE
// wait and then re-check its WHERE clause against the committed row.

const (
	// oauthKeep is how long codes and refresh tokens are kept after they
	// expire: long enough to recognise a reuse (and revoke what it threatens)
	// well after the fact, short enough that the tables stay bounded.
	oauthKeep = 24 * time.Hour
	// purgeBatch bounds the rows one save purges, so that a save costs the
	// same however long the tables went unpurged; every save adds one row and
	// may remove up to this many, so the tables cannot outgrow the purge.
	purgeBatch = 100
	// maxClientIDLen bounds a client_id worth looking up: generated ids are
	// 24 characters.
	maxClientIDLen = 128
)

var (
	errCodeNotFound   = resourceapi.Errorf(resourceapi.CodeNotFound, "Authorization code not found")
	errCodeReused     = resourceapi.Errorf(resourceapi.CodeConflict, "Authorization code already used")
	errTokenNotFound  = resourceapi.Errorf(resourceapi.CodeNotFound, "Refresh token not found")
	errTokenReused    = resourceapi.Errorf(resourceapi.CodeConflict, "Refresh token already used")
	errFamilyRevoked  = resourceapi.Errorf(resourceapi.CodeConflict, "Refresh token family revoked")
	errClientNotFound = resourceapi.ErrNotFound(resourceapi.OAuthClients)
)

// Client implements resourceapi.OAuthStore. A client_id is compared exactly
// (RFC 6749 treats it as case-sensitive); the lookup goes through the
// lower-cased key, which is unique.
func (s *Store) Client(ctx context.Context, clientID string) (resourceapi.OAuthClient, error) {
	if clientID == "" || len(clientID) > maxClientIDLen {
		return resourceapi.OAuthClient{}, errClientNotFound
	}
	cols := s.readColumns(resourceapi.OAuthClients)
	query := "SELECT " + cols.list + ", secret_hash FROM oauth_clients WHERE client_id_key = " + s.dialect.Placeholder(1)
	var c resourceapi.OAuthClient
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var hash sql.NullString
		rec, err := cols.scanExtra(q.QueryRowContext(ctx, query, resourceapi.UniqueKey(clientID)), &hash)
		if err != nil {
			return err
		}
		c = resourceapi.OAuthClient{Record: rec, SecretHash: hash.String}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) || err == nil && c.ClientID() != clientID {
		return resourceapi.OAuthClient{}, errClientNotFound
	}
	if err != nil {
		return resourceapi.OAuthClient{}, fmt.Errorf("oauth client: %w", err)
	}
	return c, nil
}

// SaveCode implements resourceapi.OAuthStore. It purges codes that expired
// more than oauthKeep ago.
func (s *Store) SaveCode(ctx context.Context, c resourceapi.AuthorizationCode) error {
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.purge(ctx, tx, "oauth_codes", "hash"); err != nil {
			return err
		}
		q := s.newQuery()
		q.WriteString("INSERT INTO oauth_codes (hash, client_id, user_id, redirect_uri, code_challenge, scope, expires_at, stamp) VALUES (" +
			join([]string{q.Arg(c.Hash), q.Arg(c.ClientID), q.Arg(c.UserID), q.Arg(c.RedirectURI),
				q.Arg(c.CodeChallenge), q.Arg(c.Scope), q.Arg(c.ExpiresAt), q.Arg(c.Stamp)}) + ")")
		_, err := tx.ExecContext(ctx, q.String(), q.args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("save authorization code: %w", err)
	}
	return nil
}

// ConsumeCode implements resourceapi.OAuthStore.
func (s *Store) ConsumeCode(ctx context.Context, hash string, now time.Time) (resourceapi.AuthorizationCode, error) {
	var code resourceapi.AuthorizationCode
	var outcome error
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		// The writer may run fn again (sqlite retries a failed batch), so it
		// starts from nothing each time.
		code, outcome = resourceapi.AuthorizationCode{}, nil
		q := s.newQuery()
		q.WriteString("UPDATE oauth_codes SET used_at = " + q.Arg(now) +
			" WHERE hash = " + q.Arg(hash) + " AND used_at IS NULL AND expires_at > " + q.Arg(now) +
			" RETURNING hash, client_id, user_id, redirect_uri, code_challenge, scope, expires_at, stamp")
		exp := value{f: timeField}
		err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&code.Hash, &code.ClientID, &code.UserID,
			&code.RedirectURI, &code.CodeChallenge, &code.Scope, &exp, &code.Stamp)
		if err == nil {
			code.ExpiresAt = exp.v.(time.Time)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Not exchangeable: unknown, expired, or used. A used code presented
		// again means it leaked (RFC 6749 section 4.1.2): what it was
		// exchanged for is revoked, and that must commit, so fn succeeds
		// and the outcome travels beside it.
		outcome = errCodeNotFound
		q = s.newQuery()
		q.WriteString("SELECT client_id, user_id FROM oauth_codes WHERE hash = " + q.Arg(hash) + " AND used_at IS NOT NULL")
		var clientID string
		var userID int64
		err = tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&clientID, &userID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		outcome = errCodeReused
		return s.revokeFamily(ctx, tx, hash, clientID, userID, now)
	})
	if err != nil {
		return resourceapi.AuthorizationCode{}, fmt.Errorf("consume authorization code: %w", err)
	}
	if outcome != nil {
		return resourceapi.AuthorizationCode{}, outcome
	}
	return code, nil
}

// revokeFamily marks family revoked, recording it if none of its tokens was
// saved yet (a code's family), so that a token saved later for it is
// refused.
func (s *Store) revokeFamily(ctx context.Context, tx Querier, family, clientID string, userID int64, now time.Time) error {
	q := s.newQuery()
	q.WriteString("INSERT INTO oauth_refresh_families (family, client_id, user_id, expires_at, revoked_at) VALUES (" +
		join([]string{q.Arg(family), q.Arg(clientID), q.Arg(userID), q.Arg(now), q.Arg(now)}) +
		") ON CONFLICT (family) DO UPDATE SET revoked_at = coalesce(oauth_refresh_families.revoked_at, excluded.revoked_at)")
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	return nil
}

// SaveRefreshToken implements resourceapi.OAuthStore. It joins the token's
// family (creating it, or extending its expiry), and fails with CodeConflict
// when the family was revoked: a code reused while its first exchange was
// still under way revokes the family before the token of that exchange is
// saved. It purges families and tokens that expired more than oauthKeep
// ago.
func (s *Store) SaveRefreshToken(ctx context.Context, t resourceapi.RefreshToken) error {
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.purge(ctx, tx, "oauth_refresh_families", "family"); err != nil {
			return err
		}
		if err := s.purge(ctx, tx, "oauth_refresh_tokens", "hash"); err != nil {
			return err
		}
		if _, err := s.joinFamily(ctx, tx, t); err != nil {
			return err
		}
		return s.insertRefreshToken(ctx, tx, t)
	})
	if errors.Is(err, errFamilyRevoked) {
		return errFamilyRevoked
	}
	if err != nil {
		return fmt.Errorf("save refresh token: %w", err)
	}
	return nil
}

// joinFamily creates t's family (with t's stamp) or extends its expiry to
// t's, and returns the family's stamp. It fails with errFamilyRevoked when
// the family is revoked, or when its stamp is no longer its user's security
// stamp: the user's password or email changed, or their sessions were
// ended, since the sign-in that began it. The upsert locks the family's row
// until the transaction ends, which orders it against any revocation; a
// stamp that changes after the check is caught by the next rotation, and
// the access token issued beside this one carries the old stamp, which the
// Authenticator refuses.
func (s *Store) joinFamily(ctx context.Context, tx Querier, t resourceapi.RefreshToken) (string, error) {
	q := s.newQuery()
	q.WriteString("INSERT INTO oauth_refresh_families (family, client_id, user_id, expires_at, stamp) VALUES (" +
		join([]string{q.Arg(t.Family), q.Arg(t.ClientID), q.Arg(t.UserID), q.Arg(t.ExpiresAt), q.Arg(t.Stamp)}) +
		") ON CONFLICT (family) DO UPDATE SET expires_at = " + laterExpiry +
		" RETURNING revoked_at, stamp, (SELECT u.security_stamp FROM users u WHERE u.id = oauth_refresh_families.user_id)")
	revoked := value{f: timeField}
	var stamp string
	var current sql.NullString
	if err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&revoked, &stamp, &current); err != nil {
		return "", fmt.Errorf("join family: %w", err)
	}
	if revoked.v != nil || stamp == "" || stamp != current.String {
		return "", errFamilyRevoked
	}
	return stamp, nil
}

// laterExpiry keeps the later of a family's expiry and its new token's, in
// the ON CONFLICT clause of joinFamily (greatest and max differ between the
// databases; CASE does not).
const laterExpiry = "CASE WHEN excluded.expires_at > oauth_refresh_families.expires_at " +
	"THEN excluded.expires_at ELSE oauth_refresh_families.expires_at END"

func (s *Store) insertRefreshToken(ctx context.Context, tx Querier, t resourceapi.RefreshToken) error {
	q := s.newQuery()
	q.WriteString("INSERT INTO oauth_refresh_tokens (hash, family, client_id, user_id, scope, expires_at) VALUES (" +
		join([]string{q.Arg(t.Hash), q.Arg(t.Family), q.Arg(t.ClientID), q.Arg(t.UserID), q.Arg(t.Scope), q.Arg(t.ExpiresAt)}) + ")")
	_, err := tx.ExecContext(ctx, q.String(), q.args...)
	return err
}

// RotateRefreshToken implements resourceapi.OAuthStore.
func (s *Store) RotateRefreshToken(ctx context.Context, old string, next resourceapi.RefreshToken, now time.Time, grace time.Duration) (resourceapi.RefreshToken, error) {
	var prev resourceapi.RefreshToken
	var outcome error
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		// The writer may run fn again (sqlite retries a failed batch), so it
		// starts from nothing each time.
		prev, outcome = resourceapi.RefreshToken{}, nil
		// The winner: the one UPDATE that finds the token unused.
		q := s.newQuery()
		q.WriteString("UPDATE oauth_refresh_tokens SET rotated_at = " + q.Arg(now) +
			" WHERE hash = " + q.Arg(old) + " AND rotated_at IS NULL AND expires_at > " + q.Arg(now) +
			" RETURNING hash, family, client_id, user_id, scope, expires_at")
		exp := value{f: timeField}
		err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&prev.Hash, &prev.Family, &prev.ClientID,
			&prev.UserID, &prev.Scope, &exp)
		if err == nil {
			prev.ExpiresAt = exp.v.(time.Time)
			next.Family, next.ClientID, next.UserID, next.Scope = prev.Family, prev.ClientID, prev.UserID, prev.Scope
			// A revoked family, or one of an earlier security stamp,
			// fails here, and the rotation is undone.
			stamp, err := s.joinFamily(ctx, tx, next)
			if err != nil {
				return err
			}
			prev.Stamp = stamp
			if err := s.insertRefreshToken(ctx, tx, next); err != nil {
				return err
			}
			// Families that are only ever refreshed add a token per use:
			// rotations purge too.
			return s.purge(ctx, tx, "oauth_refresh_tokens", "hash")
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Not rotatable: unknown, expired, revoked, or already used.
		outcome = errTokenNotFound
		q = s.newQuery()
		q.WriteString("SELECT t.family, t.client_id, t.user_id, t.rotated_at, f.revoked_at" +
			" FROM oauth_refresh_tokens t JOIN oauth_refresh_families f ON f.family = t.family" +
			" WHERE t.hash = " + q.Arg(old))
		var family, clientID string
		var userID int64
		rotated, revoked := value{f: timeField}, value{f: timeField}
		err = tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&family, &clientID, &userID, &rotated, &revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if revoked.v != nil || rotated.v == nil {
			return nil // revoked, or expired unused
		}
		if now.Sub(rotated.v.(time.Time)) < grace {
			return nil // taken for the client's own race: refused, nothing revoked
		}
		// Used before: someone holds a token that was already exchanged,
		// and either of the two may be the thief, so the whole family goes.
		outcome = errTokenReused
		return s.revokeFamily(ctx, tx, family, clientID, userID, now)
	})
	if errors.Is(err, errFamilyRevoked) {
		return resourceapi.RefreshToken{}, errTokenNotFound
	}
	if err != nil {
		return resourceapi.RefreshToken{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	if outcome != nil {
		return resourceapi.RefreshToken{}, outcome
	}
	return prev, nil
}

// RevokeRefreshToken implements resourceapi.OAuthStore.
func (s *Store) RevokeRefreshToken(ctx context.Context, hash, clientID string, now time.Time) error {
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		q := s.newQuery()
		q.WriteString("UPDATE oauth_refresh_families SET revoked_at = " + q.Arg(now) +
			" WHERE revoked_at IS NULL AND family = (SELECT family FROM oauth_refresh_tokens WHERE hash = " +
			q.Arg(hash) + " AND client_id = " + q.Arg(clientID) + ")")
		_, err := tx.ExecContext(ctx, q.String(), q.args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke refresh token: %w", err)
	}
	return nil
}

// purge deletes up to purgeBatch rows of table (codes, tokens or families)
// that expired more than oauthKeep ago, by their key column. Where writes
// run concurrently (the dialect locks rows), concurrent purges skip each
// other's rows instead of waiting for them, in whatever order: waiting
// could deadlock two saves, and fail them both, over rows neither needs.
func (s *Store) purge(ctx context.Context, tx Querier, table, key string) error {
	q := s.newQuery()
	lock := s.dialect.ForUpdate()
	if lock != "" {
		lock += " SKIP LOCKED"
	}
	q.WriteString("DELETE FROM " + table + " WHERE " + key + " IN (SELECT " + key + " FROM " + table +
		" WHERE expires_at < " + q.Arg(s.now().Add(-oauthKeep)) + " LIMIT " + q.Arg(purgeBatch) + lock + ")")
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("purge %s: %w", table, err)
	}
	return nil
}

// Setting implements resourceapi.SettingStore: insert if absent, then read,
// in one transaction. On PostgreSQL a concurrent first insert makes this one
// wait for it and do nothing, and the read that follows (a new snapshot under
// READ COMMITTED) sees the value that won.
func (s *Store) Setting(ctx context.Context, name, value string) (string, error) {
	var got string
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		q := s.newQuery()
		q.WriteString("INSERT INTO settings (name, value) VALUES (" + q.Arg(name) + ", " + q.Arg(value) + ") ON CONFLICT (name) DO NOTHING")
		if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE name = "+s.dialect.Placeholder(1), name).Scan(&got)
	})
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	return got, nil
}
