package oauth_test

import (
	"context"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/resourceapi/resourceapi"
)

// chromium returns the path of a Chromium binary, or "" when none is
// installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowser signs in on the authorization page in headless Chromium as a
// user would (typing into the labelled fields, pressing Allow), follows the
// redirect to the client, and exchanges the code with x/oauth2. The client's
// redirect URI is on another origin than the page (localhost against
// 127.0.0.1, both this test's server), so the page's Content-Security-Policy
// must let the form's redirect through. The token then reads the user over
// the REST API. The browser may make no request
// outside the test server and log no error (a CSP violation included).
func TestBrowser(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("browser test skipped: Chromium not found (apt-get install chromium)")
	}
	e := newEnv(t, backends[0].open)
	base, err := url.Parse(e.base)
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://localhost:" + base.Port() + "/callback"
	client := e.mustClient(t, resourceapi.Record{"name": "Browser App", "public": true,
		"grants":        []string{resourceapi.GrantAuthorizationCode, resourceapi.GrantRefreshToken},
		"redirect_uris": []string{callback}})
	cfg := e.config(client, oauth2.AuthStyleInParams)
	cfg.RedirectURL = callback
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("browser-state", oauth2.S256ChallengeOption(verifier))

	alloc, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()

	var mu sync.Mutex
	var requests, problems []string
	// Listen starts the browser, which lives as long as ctx: the steps below
	// run under a timeout derived from it.
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError && !strings.HasSuffix(ev.Entry.URL, "/favicon.ico") {
				problems = append(problems, string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	run, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fail := func(what string, err error) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("browser: %s: %v (requests %v, problems %v)", what, err, requests, problems)
	}
	if err := chromedp.Do(run, chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.ID("email"))); err != nil {
		fail("load the sign-in page", err)
	}
	title, err := chromedp.Run(run, chromedp.Title())
	if err != nil {
		fail("read the title", err)
	}
	err = chromedp.Do(run,
		chromedp.SendKeys(chromedp.ID("email"), "ada@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`button[value="allow"]`)),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		fail("sign in and allow", err)
	}
	done, err := chromedp.Run(run, chromedp.Text(chromedp.ID("done")))
	if err != nil {
		fail("read the callback page", err)
	}
	location, err := chromedp.Run(run, chromedp.Location())
	if err != nil {
		fail("read the location", err)
	}
	if title != "Sign in to allow Browser App" || done != "Signed in." {
		t.Errorf("title %q, final text %q", title, done)
	}
	final, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	q := final.Query()
	if !strings.HasPrefix(location, callback+"?") || q.Get("state") != "browser-state" || q.Get("code") == "" {
		t.Fatalf("browser ended at %s, want the callback with a code and the state", location)
	}
	tok, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	e.mustVerify(t, tok.AccessToken, e.owner.ID(), "Ada Lovelace")
	e.mustCallAPI(t, tok.AccessToken, e.owner.ID())

	mu.Lock()
	defer mu.Unlock()
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil || u.Port() != base.Port() || (u.Hostname() != base.Hostname() && u.Hostname() != "localhost") {
			t.Errorf("the browser requested %s, outside the test server", r)
		}
	}
	if len(requests) < 3 {
		t.Errorf("requests = %v, want at least the page, the form's POST and the callback", requests)
	}
	for _, p := range problems {
		t.Errorf("browser logged %s", p)
	}
}
