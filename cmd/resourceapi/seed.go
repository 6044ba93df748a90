package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/resourceapi/resourceapi"
)

var seedCommand = &command{
	name:     "seed",
	synopsis: "[--password-stdin]",
	summary:  "fill an empty database with a small sample to try the API",
	about: `Fill an empty database with a small, realistic sample for trying the API:
users with roles and permissions, posts, products with reviews, orders, and
articles with comments. It writes through the same rules as the API (events
included), also beside a running server, and shows a progress bar on a
terminal. Every sample user has the same password: generated and printed
once, or read from the first line of standard input with --password-stdin.

It refuses a database that holds anything but its admins (and their API
keys): it is for a new installation, never for one in use.`,
	setup: func(fs *flag.FlagSet) action {
		pwStdin := fs.Bool("password-stdin", false, "read the sample users' password from the first line of standard input")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			password, generated := rand.Text(), true
			if *pwStdin {
				pw, err := readLine(m.stdin)
				if err != nil {
					return err
				}
				password, generated = pw, false
			}
			if err := m.requireEmpty(ctx); err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			if isTerminal(m.stderr) {
				bar = progressbar.NewOptions(sample.records(), progressbar.OptionSetWriter(m.stderr),
					progressbar.OptionSetDescription("seed"), progressbar.OptionShowCount(),
					progressbar.OptionClearOnFinish(), progressbar.OptionSetRenderBlankState(true))
			}
			counts, err := m.seed(ctx, password, func() {
				if bar != nil {
					bar.Add(1)
				}
			})
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(m.stdout, "Seeded %s.\n", counts)
			if generated {
				fmt.Fprintf(m.stdout, "Every sample user (%s, ...) signs in with the password %s (shown once).\n",
					sample.users[0].email, password)
			} else {
				fmt.Fprintf(m.stdout, "Every sample user (%s, ...) signs in with the password read from standard input.\n",
					sample.users[0].email)
			}
			return nil
		})
	},
}

// requireEmpty fails unless the database holds nothing but admins and their
// API keys (serve's first start makes one of each).
func (m *manager) requireEmpty(ctx context.Context) error {
	count := func(res *resourceapi.Resource, filters ...resourceapi.FilterValue) (int, error) {
		q, err := resourceapi.NewListQuery(res, resourceapi.ListQuery{Limit: 1, Filters: filters})
		if err != nil {
			return 0, err
		}
		page, err := m.svc.List(ctx, system, res, 0, q)
		return page.Total, err
	}
	var found []string
	users, err := count(resourceapi.Users)
	if err != nil {
		return explain("count users", err)
	}
	admins, err := count(resourceapi.Users, resourceapi.FilterValue{Filter: resourceapi.Users.Filter("role"), Value: resourceapi.RoleAdmin})
	if err != nil {
		return explain("count users", err)
	}
	if n := users - admins; n > 0 {
		found = append(found, plural(n, "user")+" besides the admins")
	}
	for _, res := range []*resourceapi.Resource{resourceapi.Posts, resourceapi.Products, resourceapi.Reviews,
		resourceapi.Orders, resourceapi.Articles, resourceapi.Comments, resourceapi.OAuthClients} {
		n, err := count(res)
		if err != nil {
			return explain("count "+res.Name, err)
		}
		if n > 0 {
			found = append(found, plural(n, res.Singular))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("seed fills an empty database only, and this one has %s; nothing was written", strings.Join(found, ", "))
	}
	for _, u := range sample.users {
		if _, err := m.db.AccountByEmail(ctx, u.email); err == nil {
			return fmt.Errorf("seed: a user with the sample email %s exists already; nothing was written", u.email)
		}
	}
	return nil
}

func plural(n int, singular string) string {
	if n == 1 {
		return "1 " + singular
	}
	if strings.HasSuffix(singular, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(singular, "y"))
	}
	return fmt.Sprintf("%d %ss", n, singular)
}

// seedCounts is how many records seed created, by resource.
type seedCounts struct {
	users, posts, products, reviews, orders, articles, comments int
}

func (c seedCounts) String() string {
	return strings.Join([]string{plural(c.users, "user"), plural(c.posts, "post"), plural(c.products, "product"),
		plural(c.reviews, "review"), plural(c.orders, "order"), plural(c.articles, "article"),
		plural(c.comments, "comment")}, ", ")
}

// seed creates the sample through the rule layer, calling step after each
// record.
func (m *manager) seed(ctx context.Context, password string, step func()) (seedCounts, error) {
	var n seedCounts
	create := func(res *resourceapi.Resource, parent int64, rec resourceapi.Record) (int64, error) {
		out, err := m.svc.Create(ctx, system, res, parent, rec)
		if err != nil {
			return 0, explain("seed: create "+res.Singular, err)
		}
		step()
		return out.ID(), nil
	}
	users := map[string]int64{}
	for _, u := range sample.users {
		rec := resourceapi.Record{"name": u.name, "email": u.email, "age": u.age, "password": password,
			"roles": u.roles, "permissions": u.permissions}
		id, err := create(resourceapi.Users, 0, rec)
		if err != nil {
			return n, err
		}
		users[u.email] = id
		n.users++
	}
	for _, p := range sample.posts {
		if _, err := create(resourceapi.Posts, users[p.author], resourceapi.Record{"title": p.title, "content": p.content}); err != nil {
			return n, err
		}
		n.posts++
	}
	products := map[string]int64{}
	for _, p := range sample.products {
		id, err := create(resourceapi.Products, 0, resourceapi.Record{"name": p.name, "description": p.description, "price_cents": p.price})
		if err != nil {
			return n, err
		}
		products[p.name] = id
		n.products++
		for _, r := range p.reviews {
			rec := resourceapi.Record{"user_id": users[r.author], "rating": r.rating, "comment": r.comment}
			if _, err := create(resourceapi.Reviews, id, rec); err != nil {
				return n, err
			}
			n.reviews++
		}
	}
	for _, o := range sample.orders {
		items := make([]resourceapi.Record, len(o.items))
		for i, it := range o.items {
			items[i] = resourceapi.Record{"product_id": products[it.product], "quantity": it.quantity}
		}
		if _, err := create(resourceapi.Orders, users[o.customer], resourceapi.Record{"status": o.status, "items": items}); err != nil {
			return n, err
		}
		n.orders++
	}
	for _, a := range sample.articles {
		id, err := create(resourceapi.Articles, 0, resourceapi.Record{"author_id": users[a.author], "title": a.title,
			"body": a.body, "published": a.published})
		if err != nil {
			return n, err
		}
		n.articles++
		for _, c := range a.comments {
			if _, err := create(resourceapi.Comments, id, resourceapi.Record{"author_id": users[c.author], "body": c.body}); err != nil {
				return n, err
			}
			n.comments++
		}
	}
	return n, nil
}

type (
	sampleUser struct {
		name, email        string
		age                int64
		roles, permissions []string
	}
	samplePost   struct{ author, title, content string }
	sampleReview struct {
		author  string
		rating  int64
		comment string
	}
	sampleProduct struct {
		name, description string
		price             int64
		reviews           []sampleReview
	}
	sampleItem struct {
		product  string
		quantity int64
	}
	sampleOrder struct {
		customer, status string
		items            []sampleItem
	}
	sampleComment struct{ author, body string }
	sampleArticle struct {
		author, title, body string
		published           bool
		comments            []sampleComment
	}
	sampleData struct {
		users    []sampleUser
		posts    []samplePost
		products []sampleProduct
		orders   []sampleOrder
		articles []sampleArticle
	}
)

// records is how many records the sample holds.
func (s sampleData) records() int {
	n := len(s.users) + len(s.posts) + len(s.products) + len(s.orders) + len(s.articles)
	for _, p := range s.products {
		n += len(p.reviews)
	}
	for _, a := range s.articles {
		n += len(a.comments)
	}
	return n
}

const (
	grace    = "grace.hopper@example.com"
	margaret = "margaret.hamilton@example.com"
	alan     = "alan.turing@example.com"
	kath     = "katherine.johnson@example.com"
	edsger   = "edsger.dijkstra@example.com"
	barbara  = "barbara.liskov@example.com"
	dennis   = "dennis.ritchie@example.com"
	frances  = "frances.allen@example.com"
)

// sample is what seed writes: a few people who write, sell, buy and review.
var sample = sampleData{
	users: []sampleUser{
		{"Grace Hopper", grace, 45, []string{resourceapi.RoleEditor}, nil},
		{"Margaret Hamilton", margaret, 33, []string{resourceapi.RoleEditor}, nil},
		{"Alan Turing", alan, 41, []string{resourceapi.RoleUser}, nil},
		{"Katherine Johnson", kath, 51, []string{resourceapi.RoleUser}, nil},
		{"Edsger Dijkstra", edsger, 42, []string{resourceapi.RoleUser}, nil},
		{"Barbara Liskov", barbara, 48, []string{resourceapi.RoleUser}, nil},
		{"Dennis Ritchie", dennis, 30, []string{resourceapi.RoleUser}, nil},
		// The shop's manager: a user who may also change products and
		// read every order.
		{"Frances Allen", frances, 38, []string{resourceapi.RoleUser}, []string{"products:write", "orders:read"}},
	},
	posts: []samplePost{
		{grace, "Finding the first bug", "A moth was stuck in relay 70 of panel F. We taped it into the logbook: the first actual case of a bug being found."},
		{grace, "Why compilers matter", "People should write programs in words they know, and let the machine translate them into its own codes."},
		{margaret, "Priority displays", "When the computer is overloaded, it must do the important work first and say so, not halt."},
		{alan, "Can machines think?", "Instead of answering the question directly, consider a game played by a machine, a person and an interrogator."},
		{alan, "On computable numbers", "A number is computable if its decimal can be written down by a machine that follows a finite table of instructions."},
		{kath, "Checking the trajectory", "Before the flight, the numbers from the electronic computer were checked by hand, equation by equation."},
		{edsger, "Goto considered harmful", "The quality of programmers decreases with the density of go to statements in the programs they produce."},
		{edsger, "The shortest path", "A tree of shortest paths grows from the source one nearest vertex at a time."},
		{barbara, "Substitution", "Objects of a subtype must behave as objects of the supertype would, wherever those are used."},
		{dennis, "A portable language", "Write the operating system in a language close to the machine but not tied to one machine."},
		{frances, "Optimizing the loop", "Most of a program's time is spent in a few loops: analyse the flow of control to make them fast."},
	},
	products: []sampleProduct{
		{"Mechanical keyboard", "Tenkeyless, hot-swappable switches, USB-C.", 12900, []sampleReview{
			{alan, 5, "Types as well as it sounds."},
			{edsger, 4, "Good keys; the layout takes a week to learn."},
			{dennis, 5, "Every character counts, and this makes them count."},
		}},
		{"27-inch monitor", "2560x1440 IPS panel, adjustable stand.", 32900, []sampleReview{
			{kath, 5, "Sharp enough to check figures on."},
			{barbara, 3, "Fine picture; the stand wobbles."},
		}},
		{"USB-C hub", "Seven ports: HDMI, Ethernet, SD card, three USB-A, power delivery.", 4900, []sampleReview{
			{grace, 4, "Everything plugs into one cable."},
		}},
		{"Noise-cancelling headphones", "Over-ear, 30-hour battery.", 24900, []sampleReview{
			{margaret, 5, "Quiet enough to think in an open office."},
			{alan, 4, "Comfortable for a whole afternoon."},
		}},
		{"Standing desk", "Electric, 120 x 70 cm, two memory positions.", 44900, []sampleReview{
			{frances, 4, "Sturdy; the motor is loud."},
		}},
		{"Laptop stand", "Aluminium, folds flat.", 3900, nil},
		{"Notebook, dotted", "A5, 160 pages, lies flat.", 1500, []sampleReview{
			{kath, 5, "Calculations stay in straight lines."},
			{edsger, 5, "The best proofs are written by hand."},
		}},
	},
	orders: []sampleOrder{
		{alan, "shipped", []sampleItem{{"Mechanical keyboard", 1}, {"Notebook, dotted", 3}}},
		{kath, "paid", []sampleItem{{"27-inch monitor", 2}}},
		{edsger, "pending", []sampleItem{{"Notebook, dotted", 5}}},
		{barbara, "shipped", []sampleItem{{"USB-C hub", 1}, {"Laptop stand", 1}}},
		{dennis, "cancelled", []sampleItem{{"Standing desk", 1}}},
		{dennis, "paid", []sampleItem{{"Mechanical keyboard", 1}}},
		{grace, "shipped", []sampleItem{{"Noise-cancelling headphones", 1}, {"USB-C hub", 2}}},
		{margaret, "pending", []sampleItem{{"Noise-cancelling headphones", 1}}},
	},
	articles: []sampleArticle{
		{grace, "A field guide to debugging", "Reproduce it, reduce it, then read the logbook: most bugs have been seen before.", true, []sampleComment{
			{alan, "Reducing it is most of the work."},
			{dennis, "And keep the moth."},
		}},
		{grace, "Nanoseconds, explained", "A nanosecond is about thirty centimetres of wire: the distance light travels in it.", true, []sampleComment{
			{kath, "A good way to see why distance is time."},
		}},
		{margaret, "Software engineering", "Treat software with the same discipline as any other engineering: test every path.", true, []sampleComment{
			{edsger, "Testing shows the presence of bugs, never their absence."},
			{barbara, "Which is why the specification comes first."},
			{margaret, "Both, then."},
		}},
		{margaret, "Draft: error recovery", "Notes on restarting a program at a safe point after an overload.", false, nil},
	},
}
