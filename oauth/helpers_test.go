package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/oauth2"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	rauth "github.com/resourceapi/resourceapi/auth"
	apihttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/storetest"
	"github.com/resourceapi/resourceapi/token"
)

// store is what the server needs of a database, and the tests' setup too.
type store interface {
	resourceapi.Store
	resourceapi.IdentityStore
	resourceapi.OAuthStore
}

// backend opens a fresh store on a clock.
type backend struct {
	name string
	open func(t *testing.T, now resourceapi.Clock) store
}

// backends are the real databases: a SQLite file always, PostgreSQL when
// pgtest's variable names a server.
var backends = []backend{
	{"SQLite", func(t *testing.T, now resourceapi.Clock) store {
		db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(t), sqlite.Options{Now: now})
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}},
	{"PostgreSQL", func(t *testing.T, now resourceapi.Clock) store {
		db, err := postgres.Open(context.Background(), pgtest.Migrated(t), postgres.Options{Now: now})
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}},
}

// env is a running authorization server on a real store, with a user and
// clients of every kind.
type env struct {
	srv    *httptest.Server
	base   string
	clock  *storetest.Clock
	store  store
	svc    *resourceapi.Service
	tokens *token.HS256
	guess  *guessLimiter

	owner    resourceapi.Record // ada@example.com, password ownerPassword
	app      testClient         // confidential: password, client_credentials, refresh_token
	web      testClient         // confidential: authorization_code, refresh_token
	spa      testClient         // public: authorization_code, refresh_token
	ccOnly   testClient         // confidential: client_credentials only, with a redirect URI
	callback string             // the redirect URI of web and spa

	mu        sync.Mutex
	callbacks []url.Values // queries the callback endpoint received
}

type testClient struct {
	id, secret string
	userID     int64
}

const ownerPassword = "correct horse battery staple"

// start is the clock's start: a fixed instant, so failures reproduce.
var start = time.Date(2026, 11, 21, 5, 7, 37, 0, time.UTC)

// newEnv starts a server on a store from open; opts adjust its Config.
func newEnv(t *testing.T, open func(t *testing.T, now resourceapi.Clock) store, opts ...func(*oauth.Config)) *env {
	t.Helper()
	clock := storetest.NewClock(start, 0)
	st := open(t, clock.Now)
	hasher := argon2id.New()
	tokens, err := token.New([]byte(strings.Repeat("k", token.MinSecretLen)), token.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	guess := &guessLimiter{limit: 5, used: map[string]int{}}
	auth, err := rauth.New(rauth.Config{Store: st, Hasher: hasher, Tokens: tokens,
		AccountGuesses: guess, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clock: clock, store: st, svc: resourceapi.NewService(st, hasher), tokens: tokens, guess: guess}
	e.svc.SetAuthenticator(auth)
	cfg := oauth.Config{Store: st, Auth: auth, Tokens: tokens, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	srv := oauth.NewServer(cfg)
	// The service's own HTTP server mounts the authorization server, as in
	// production; /callback stands in for a client application.
	api := apihttp.NewServer(apihttp.Config{Service: e.svc, OAuth: srv.Handler()})
	mux := http.NewServeMux()
	mux.Handle("/", api.Handler())
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.callbacks = append(e.callbacks, r.URL.Query())
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!DOCTYPE html><title>Signed in</title><p id=done>Signed in.</p>")
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	e.base = e.srv.URL
	e.callback = e.base + "/callback"

	e.owner = e.mustUser(t, "Ada Lovelace", "ada@example.com", ownerPassword)
	e.app = e.mustClient(t, resourceapi.Record{"name": "Backend App",
		"grants": []string{resourceapi.GrantPassword, resourceapi.GrantClientCredentials, resourceapi.GrantRefreshToken}})
	e.web = e.mustClient(t, resourceapi.Record{"name": "Web <App> & Co",
		"grants":        []string{resourceapi.GrantAuthorizationCode, resourceapi.GrantRefreshToken},
		"redirect_uris": []string{e.callback, "https://app.example/cb?tenant=7"}})
	e.spa = e.mustClient(t, resourceapi.Record{"name": "Single Page App", "public": true,
		"grants":        []string{resourceapi.GrantAuthorizationCode, resourceapi.GrantRefreshToken},
		"redirect_uris": []string{e.callback}})
	e.ccOnly = e.mustClient(t, resourceapi.Record{"name": "Machine",
		"grants": []string{resourceapi.GrantClientCredentials}, "redirect_uris": []string{e.callback}})
	return e
}

// testWriter sends the server's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (e *env) mustUser(t *testing.T, name, email, password string) resourceapi.Record {
	t.Helper()
	rec, err := e.svc.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, 0,
		resourceapi.Record{"name": name, "email": email, "password": password})
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	return rec
}

func (e *env) mustClient(t *testing.T, rec resourceapi.Record) testClient {
	t.Helper()
	out, err := e.svc.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, rec)
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	secret, _ := out["secret"].(string)
	id, _ := out["client_id"].(string)
	uid, _ := out["user_id"].(int64)
	return testClient{id: id, secret: secret, userID: uid}
}

// setDeleted soft-deletes (or restores) a user.
func (e *env) setDeleted(t *testing.T, id int64, deleted bool) {
	t.Helper()
	_, err := e.svc.Update(context.Background(), resourceapi.SystemCaller(), resourceapi.Users,
		resourceapi.Address{ID: id}, resourceapi.Record{"deleted": deleted}, nil)
	if err != nil {
		t.Fatalf("set deleted: %v", err)
	}
}

// config returns an x/oauth2 configuration for c.
func (e *env) config(c testClient, style oauth2.AuthStyle) *oauth2.Config {
	return &oauth2.Config{ClientID: c.id, ClientSecret: c.secret, RedirectURL: e.callback, Scopes: []string{"api"},
		Endpoint: oauth2.Endpoint{AuthURL: e.base + "/oauth/authorize", TokenURL: e.base + "/oauth/token", AuthStyle: style}}
}

// ctx is a context whose x/oauth2 requests go to the test server.
func (e *env) ctx(t *testing.T) context.Context {
	return context.WithValue(t.Context(), oauth2.HTTPClient, e.srv.Client())
}

// mustVerify checks that tok is an access token for user id, valid now.
func (e *env) mustVerify(t *testing.T, tok string, id int64, name string) {
	t.Helper()
	c, err := e.tokens.Verify(tok)
	if err != nil {
		t.Fatalf("access token does not verify: %v", err)
	}
	now := e.clock.Now()
	want := resourceapi.Claims{Subject: itoa(id), Name: name, IssuedAt: now, ExpiresAt: now.Add(resourceapi.AccessTokenTTL)}
	if c.Subject != want.Subject || c.Name != want.Name || !c.IssuedAt.Equal(want.IssuedAt) || !c.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("claims = %+v, want %+v", c, want)
	}
}

// mustCallAPI reads user id over the REST API with the access token, as a
// client of the token would.
func (e *env) mustCallAPI(t *testing.T, tok string, id int64) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.base+"/api/users/"+itoa(id), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var user struct {
		ID int64 `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&user); err != nil || resp.StatusCode != 200 || user.ID != id {
		t.Fatalf("GET /api/users/%d with the token = %d, id %d, %v; want 200 and the user", id, resp.StatusCode, user.ID, err)
	}
}

// post sends a form to path, with extra headers as name, value pairs.
func (e *env) post(t *testing.T, path string, form url.Values, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tokenBody is a token endpoint response, success or error.
type tokenBody struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// mustToken posts to the token endpoint and checks the status, the
// headers every response carries, and the body's shape.
func (e *env) mustToken(t *testing.T, status int, form url.Values, headers ...string) (tokenBody, *http.Response) {
	t.Helper()
	resp := e.post(t, "/oauth/token", form, headers...)
	return mustTokenResponse(t, resp, status), resp
}

func mustTokenResponse(t *testing.T, resp *http.Response, status int) tokenBody {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, raw)
	}
	mustNoStore(t, resp)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var b tokenBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("body %s: %v", raw, err)
	}
	if status == http.StatusOK {
		if b.AccessToken == "" || b.TokenType != "Bearer" || b.ExpiresIn != 900 || b.Scope != "api" || b.Error != "" {
			t.Fatalf("token response = %s, want access_token, Bearer, 900, api", raw)
		}
	} else if b.Error == "" || b.Description == "" || b.AccessToken != "" {
		t.Fatalf("error response = %s, want error and error_description only", raw)
	}
	return b
}

func mustNoStore(t *testing.T, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Fatalf("Cache-Control = %q, want no-store", got)
	}
	if got := resp.Header.Get("Pragma"); got != "no-cache" {
		t.Fatalf("Pragma = %q, want no-cache", got)
	}
}

func mustError(t *testing.T, b tokenBody, code string) {
	t.Helper()
	if b.Error != code {
		t.Fatalf("error = %q (%s), want %q", b.Error, b.Description, code)
	}
}

// mustRetrieveError checks that err is the x/oauth2 error of an RFC 6749
// error response with this code and status.
func mustRetrieveError(t *testing.T, err error, status int, code string) {
	t.Helper()
	re, ok := err.(*oauth2.RetrieveError)
	if !ok {
		t.Fatalf("error = %v (%T), want *oauth2.RetrieveError", err, err)
	}
	if re.Response.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("error = %d %q (%s), want %d %q", re.Response.StatusCode, re.ErrorCode, re.ErrorDescription, status, code)
	}
}

// browser is an HTTP client with cookies that does not follow redirects,
// driving the authorization page as a browser would.
func (e *env) browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// page is a fetched HTML page.
type page struct {
	resp *http.Response
	doc  *html.Node
}

func getPage(t *testing.T, c *http.Client, u string) page {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, resp)
}

func readPage(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	doc, err := html.Parse(resp.Body)
	if err != nil {
		t.Fatalf("parse page: %v", err)
	}
	return page{resp: resp, doc: doc}
}

// all returns the elements named tag.
func (p page) all(tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(p.doc)
	return out
}

// text returns the page's visible text, spaces collapsed.
func (p page) text() string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "head") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(p.doc)
	return strings.Join(strings.Fields(b.String()), " ")
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// form returns the values the page's form would submit (its inputs'
// values; buttons are the caller's to add).
func (p page) form(t *testing.T) url.Values {
	t.Helper()
	if forms := p.all("form"); len(forms) != 1 {
		t.Fatalf("page has %d forms, want 1", len(forms))
	}
	v := url.Values{}
	for _, in := range p.all("input") {
		v.Set(attr(in, "name"), attr(in, "value"))
	}
	return v
}

// submit posts the page's form as a browser would, with the fields set.
func (p page) submit(t *testing.T, c *http.Client, e *env, set url.Values) *http.Response {
	t.Helper()
	form := p.form(t)
	for k, v := range set {
		form[k] = v
	}
	action := attr(p.all("form")[0], "action")
	target, err := p.resp.Request.URL.Parse(action)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.PostForm(target.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// guessLimiter stands in for a rate limiter of failed sign-ins: limit
// failures per key, then no more until reset.
type guessLimiter struct {
	mu    sync.Mutex
	limit int
	used  map[string]int
}

func (g *guessLimiter) AllowN(_ context.Context, key string, n int) (resourceapi.RateDecision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	left := g.limit - g.used[key]
	if n > 0 && left >= n {
		g.used[key] += n
		left -= n
		return resourceapi.RateDecision{Allowed: true, Limit: g.limit, Remaining: left}, nil
	}
	return resourceapi.RateDecision{Allowed: n == 0 && left > 0, Limit: g.limit, Remaining: left,
		RetryAfter: 90 * time.Second}, nil
}

// total returns the failures counted, for all keys.
func (g *guessLimiter) total() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, u := range g.used {
		n += u
	}
	return n
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
