package http_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rauth "github.com/resourceapi/resourceapi/auth"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// TestLookAlikeAccounts creates users whose emails differ from one another
// only in Unicode normalization (é as one code point, NFC, or as e and a
// combining accent, NFD) or in case: the second spelling of one address is
// 409 CONFLICT, the email is stored in NFC, and the account signs in with
// either spelling. Emails and names with invisible characters (format
// characters such as U+200B, U+200E, U+FEFF, U+2060) or control characters
// are 400. Both spellings used to be two accounts, and admin@localhost
// followed by U+200B a third.
func TestLookAlikeAccounts(t *testing.T) {
	const nfc, nfd = "jos\u00e9@example.com", "jose\u0301@example.com"
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"Jos\u00e9","email":"` + nfd + `","password":"correct horse battery"}`)
		if got := u["email"]; got != nfc {
			t.Errorf("email stored as %q, want %q (NFC)", got, nfc)
		}
		for _, email := range []string{nfc, nfd, "JOS\u00c9@EXAMPLE.COM", "JOSE\u0301@Example.Com", " " + nfc + " "} {
			details := c.post("/api/users", `{"name":"Other","email":"`+email+`"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
			if got := detailFields(details); len(got) != 1 || got[0] != "email" {
				t.Errorf("POST %q: details %v, want one for email", email, got)
			}
		}
		// PATCH of another user to a spelling of the address: 409 too.
		other := c.mustUser("Other", "other@example.com")
		c.do("PATCH", "/api/users/"+itoa(other), `{"email":"`+nfd+`"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		// Sign-in by email matches the normalized form, whichever is typed.
		for _, email := range []string{nfc, nfd, "JOS\u00c9@example.com"} {
			r := c.anonymous().get("/api/users/"+itoa(idOf(t, u)), "Authorization", basicAuth(email, "correct horse battery"))
			r.mustStatus(t, http.StatusOK)
		}
		// q finds the user whichever form is searched for.
		for _, q := range []string{"jos%C3%A9", "jose%CC%81"} {
			if recs, _ := c.get("/api/users?q=" + q).list(t); len(recs) != 1 {
				t.Errorf("q=%s: %d users, want 1", q, len(recs))
			}
		}

		for _, bad := range []string{"\u200b", "\u200e", "\ufeff", "\u2060", "\u202e", "\u200d", "\u0007", "\u0085", "\u2028"} {
			esc := strings.Trim(mustJSON(t, bad), `"`)
			c.post("/api/users", `{"name":"Mallory","email":"admin@local`+esc+`host"}`).
				mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			if !strings.ContainsAny(bad, "\u0085\u2028") { // whitespace, which trimming removes at the end
				c.post("/api/users", `{"name":"Mallory","email":"admin@localhost`+esc+`"}`).
					mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			}
			c.post("/api/users", `{"name":"Admin`+esc+`istrator","email":"mallory@example.com"}`).
				mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			c.do("PATCH", "/api/users/"+itoa(other), `{"name":"Adm`+esc+`inistrator"}`).
				mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		}
		// Joiners that writing needs stay: Persian and an emoji sequence.
		c.mustUser("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "fa@example.com")
		c.mustUser("Dev \U0001F469\u200d\U0001F4BB", "dev@example.com")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSpellingsShareGuessBudget guesses the password of one account under
// several spellings of its email (NFC, NFD, other case, spaces): they sign
// in to the same account, so they spend one budget of failed guesses. Keyed
// by the lower-cased text, the NFD spelling had a budget of its own.
func TestSpellingsShareGuessBudget(t *testing.T) {
	store := mustSQLite(t, nil)
	guesses := newTestLimiter(3)
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		auth, err := rauth.New(rauth.Config{Store: store.(resourceapi.IdentityStore),
			Hasher: testHasher(), AccountGuessesFrom: guesses})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Service.SetAuthenticator(auth)
	})
	c.mustAccount("Jos\u00e9", "jos\u00e9@example.com", resourceapi.RoleUser)
	anon := c.anonymous()
	for _, email := range []string{"jos\u00e9@example.com", "jose\u0301@example.com", "JOS\u00c9@example.com"} {
		anon.get("/api/users", "Authorization", basicAuth(email, "guess")).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	}
	anon.get("/api/users", "Authorization", basicAuth("JOSE\u0301@EXAMPLE.COM", "correct horse battery")).
		mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
}
