package http

import (
	"strings"

	"github.com/resourceapi/resourceapi"
)

// The handlers of other packages that the server mounts (Config.OAuth,
// Config.GraphQL) route their own paths; this package only mounts them. They
// are described here so that the document covers the whole server.
//
// The authorization server's endpoints are those of the OAuth 2.0 RFCs (6749
// and 7636 for the token endpoint and the authorization code grant with
// PKCE, 7009 for revocation, 8414 for the metadata). The GraphQL endpoint is
// described as far as GraphQL over HTTP fixes it: a query in, data and
// errors out.

// oauthRoutes adds the authorization server's endpoints.
func (g *docGen) oauthRoutes(paths *ordered[*oaPathItem]) {
	g.oauthSchemas()
	form := func(schemaName string) *oaRequestBody {
		return &oaRequestBody{Required: true, Content: ordered[*oaMediaType]{
			{"application/x-www-form-urlencoded", &oaMediaType{Schema: &schema{Ref: ref("schemas", schemaName)}}}}}
	}
	tags := []string{"oauth"}
	hs := func(extra ...string) ordered[*oaHeader] {
		return g.headers(false, true, append([]string{hCacheControl}, extra...)...)
	}
	oauthError := func(desc string) *oaResponse {
		return &oaResponse{Description: desc, Headers: hs(),
			Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthError")}}}}}
	}
	// Over the rate limit, the API's own 429 (version 1) answers; a throttled
	// password an OAuth error with Retry-After.
	tooMany := &oaResponse{Description: "Too many requests, or too many failed passwords for the account; Retry-After says when to come back.",
		Headers: hs(hRetryAfter),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{OneOf: []*schema{
			{Ref: ref("schemas", "OAuthError")}, g.envelopeFor(429)}}}}}}
	serverError := oauthError("The server could not complete the request (server_error).")
	html := func(desc string, extra ...string) *oaResponse {
		return &oaResponse{Description: desc, Headers: hs(extra...),
			Content: ordered[*oaMediaType]{{"text/html", &oaMediaType{}}}}
	}
	redirect := &oaResponse{Description: "Back to the client's redirect URI, with `code`, `state` and `iss`, or with `error`, `error_description`, `state` and `iss`.",
		Headers: hs(hLocation)}

	token := pathItem(paths, "/oauth/token")
	token.Servers = rootServers
	token.Parameters = []*oaParam{g.param("X-Request-ID")}
	token.Post = &oaOperation{OperationID: "oauthToken", Tags: tags, Summary: "Token endpoint",
		Description: "Issues an access token (and, for clients registered for it, a refresh token, which each use replaces). " +
			"The client authenticates with HTTP Basic (form-urlencoded client_id and secret) or with client_id and client_secret in the body, not both; a public client sends its client_id alone. Grants: " +
			strings.Join(resourceapi.GrantTypes(), ", ") + ".",
		RequestBody: form("OAuthTokenRequest"), Security: noSecurity()}
	token.Post.Responses.set("200", &oaResponse{Description: "The tokens.", Headers: hs(),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthToken")}}}}})
	token.Post.Responses.set("400", oauthError("The request is not valid (invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope)."))
	token.Post.Responses.set("401", &oaResponse{Description: "Client authentication failed (invalid_client).", Headers: hs(hWWWAuthenticateSometimes),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthError")}}}}})
	token.Post.Responses.set("429", tooMany)
	token.Post.Responses.set("500", serverError)

	revoke := pathItem(paths, "/oauth/revoke")
	revoke.Servers = rootServers
	revoke.Parameters = []*oaParam{g.param("X-Request-ID")}
	revoke.Post = &oaOperation{OperationID: "oauthRevoke", Tags: tags, Summary: "Revoke a refresh token (RFC 7009)",
		Description: "Revokes the refresh token and every token of its family. Unknown tokens are not an error. The client authenticates as at the token endpoint.",
		RequestBody: form("OAuthRevokeRequest"), Security: noSecurity()}
	revoke.Post.Responses.set("200", &oaResponse{Description: "Revoked (or unknown).", Headers: hs()})
	revoke.Post.Responses.set("400", oauthError("The request is not valid (invalid_request)."))
	revoke.Post.Responses.set("401", oauthError("Client authentication failed (invalid_client)."))
	revoke.Post.Responses.set("429", tooMany)
	revoke.Post.Responses.set("500", serverError)

	authorize := pathItem(paths, "/oauth/authorize")
	authorize.Servers = rootServers
	authorize.Parameters = []*oaParam{g.param("X-Request-ID")}
	q := func(name, desc string, required bool, s *schema) *oaParam {
		return &oaParam{Name: name, In: "query", Description: desc, Required: required, Schema: s}
	}
	str := func() *schema { return &schema{Type: "string"} }
	authorize.Get = &oaOperation{OperationID: "oauthAuthorize", Tags: tags, Summary: "Sign-in and consent page (authorization code grant)",
		Description: "Shows the page where the user signs in and allows or denies the client. `redirect_uri` must be one the client registered, exactly. PKCE with S256 is required.",
		Security:    noSecurity(),
		Parameters: []*oaParam{
			q("response_type", "Only `code`.", true, &schema{Type: "string", Enum: []any{"code"}}),
			q("client_id", "The client.", true, str()),
			q("redirect_uri", "One of the client's registered redirect URIs.", true, str()),
			q("code_challenge", "The base64url SHA-256 of the code verifier (43 characters).", true, str()),
			q("code_challenge_method", "Only `S256`.", true, &schema{Type: "string", Enum: []any{"S256"}}),
			q("state", "Returned to the client as it was sent.", false, str()),
			q("scope", "Only `api`, the default.", false, str()),
		}}
	authorize.Get.Responses.set("200", html("The sign-in page.", hCSP))
	authorize.Get.Responses.set("303", redirect)
	authorize.Get.Responses.set("400", html("An error page: the client or its redirect URI is unknown, so the user is not sent back.", hCSP))
	authorize.Get.Responses.set("414", html("The request is too long.", hCSP))
	authorize.Get.Responses.set("429", tooMany)
	authorize.Get.Responses.set("500", html("An error page.", hCSP))
	authorize.Post = &oaOperation{OperationID: "oauthAuthorizeSubmit", Tags: tags, Summary: "Submit the sign-in page",
		Description: "The form of the sign-in page: the user allows (with email and password) or denies. A wrong password shows the page again.",
		RequestBody: form("OAuthAuthorizeForm"), Security: noSecurity()}
	authorize.Post.Responses.set("200", html("The page again, with what went wrong.", hCSP))
	authorize.Post.Responses.set("303", redirect)
	authorize.Post.Responses.set("400", html("An error page.", hCSP))
	authorize.Post.Responses.set("403", html("The form expired or was not sent from this server's page.", hCSP))
	authorize.Post.Responses.set("429", tooMany)
	authorize.Post.Responses.set("500", html("An error page.", hCSP))

	meta := pathItem(paths, "/.well-known/oauth-authorization-server")
	meta.Servers = rootServers
	meta.Parameters = []*oaParam{g.param("X-Request-ID")}
	meta.Get = &oaOperation{OperationID: "oauthMetadata", Tags: tags, Summary: "Authorization server metadata (RFC 8414)",
		Security: noSecurity()}
	meta.Get.Responses.set("200", &oaResponse{Description: "The metadata.", Headers: g.headers(false, false, hCacheControl),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Type: "object",
			Required: []string{"issuer", "authorization_endpoint", "token_endpoint"}}}}}})
	meta.Get.Responses.set("500", serverError)
	meta.Head = headOf(meta.Get, "oauthMetadataHead")
}

func (g *docGen) oauthSchemas() {
	str := func(desc string) *schema { return &schema{Type: "string", Description: desc} }
	var grants []any
	for _, gt := range resourceapi.GrantTypes() {
		grants = append(grants, gt)
	}
	s := &g.comp.Schemas
	s.set("OAuthError", &schema{Type: "object", Required: []string{"error"},
		Description: "An OAuth 2.0 error (RFC 6749 section 5.2).",
		Properties: ordered[*schema]{
			{"error", &schema{Type: "string", Enum: []any{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
				"unsupported_grant_type", "invalid_scope", "access_denied", "unsupported_response_type", "server_error"}}},
			{"error_description", str("Why, for people.")},
		}})
	s.set("OAuthToken", &schema{Type: "object", Required: []string{"access_token", "token_type", "expires_in", "scope"},
		Description: "A token response (RFC 6749 section 5.1).",
		Properties: ordered[*schema]{
			{"access_token", str("A JWT to send as `Authorization: Bearer`.")},
			{"token_type", &schema{Const: "Bearer"}},
			{"expires_in", &schema{Type: "integer", Description: "Seconds the access token is valid."}},
			{"refresh_token", str("For clients registered for the refresh_token grant: the next refresh token (each is used once).")},
			{"scope", &schema{Const: "api"}},
		}})
	s.set("OAuthTokenRequest", &schema{Type: "object", Required: []string{"grant_type"},
		Properties: ordered[*schema]{
			{"grant_type", &schema{Type: "string", Enum: grants}},
			{"client_id", str("The client, unless it authenticates with HTTP Basic.")},
			{"client_secret", str("A confidential client's secret, unless it authenticates with HTTP Basic.")},
			{"username", str("password grant: the user's email.")},
			{"password", str("password grant: the user's password.")},
			{"code", str("authorization_code grant: the code.")},
			{"code_verifier", str("authorization_code grant: the PKCE verifier.")},
			{"redirect_uri", str("authorization_code grant: the redirect URI of the authorization request.")},
			{"refresh_token", str("refresh_token grant: the refresh token.")},
			{"scope", str("Only `api`, the default.")},
		}})
	s.set("OAuthRevokeRequest", &schema{Type: "object", Required: []string{"token"},
		Properties: ordered[*schema]{
			{"token", str("The refresh token.")},
			{"token_type_hint", str("`refresh_token`, if given.")},
			{"client_id", str("The client, unless it authenticates with HTTP Basic.")},
			{"client_secret", str("A confidential client's secret, unless it authenticates with HTTP Basic.")},
		}})
	s.set("OAuthAuthorizeForm", &schema{Type: "object", Required: []string{"decision", "csrf_token"},
		Description: "The fields of the sign-in page's form: the authorization request's parameters, repeated, and these.",
		Properties: ordered[*schema]{
			{"decision", &schema{Type: "string", Enum: []any{"allow", "deny"}}},
			{"email", str("To allow: the user's email.")},
			{"password", str("To allow: the user's password.")},
			{"csrf_token", str("The token of the page.")},
			{"response_type", str("")}, {"client_id", str("")}, {"redirect_uri", str("")}, {"state", str("")},
			{"scope", str("")}, {"code_challenge", str("")}, {"code_challenge_method", str("")},
		}})
}

// graphqlRoutes adds the GraphQL endpoint. Credentials are optional there:
// each field decides what it needs.
func (g *docGen) graphqlRoutes(paths *ordered[*oaPathItem]) {
	obj := func(desc string) *schema { return &schema{Type: []string{"object", "null"}, Description: desc} }
	s := &g.comp.Schemas
	s.set("GraphQLRequest", &schema{Type: "object", Required: []string{"query"},
		Properties: ordered[*schema]{
			{"query", &schema{Type: "string", Description: "The GraphQL document."}},
			{"operationName", &schema{Type: []string{"string", "null"}, Description: "The operation to run, when the document has several."}},
			{"variables", obj("Values of the operation's variables.")},
			{"extensions", obj("Protocol extensions.")},
		}})
	s.set("GraphQLResponse", &schema{Type: "object",
		Description: "A GraphQL response: data, and errors each with a message, locations, path and extensions.code (the error codes of the REST API).",
		Properties: ordered[*schema]{
			{"data", &schema{Description: "The result, null when the operation could not run."}},
			{"errors", &schema{Type: "array", Items: &schema{Type: "object", Required: []string{"message"},
				Properties: ordered[*schema]{{"message", &schema{Type: "string"}}}}}},
			{"extensions", &schema{Type: "object"}},
		}})
	result := func() *oaResponse {
		mt := &oaMediaType{Schema: &schema{Ref: ref("schemas", "GraphQLResponse")}}
		return &oaResponse{Description: "The result of the operation; errors of fields are in errors.",
			Headers: g.headers(false, true),
			Content: ordered[*oaMediaType]{{"application/json", mt}, {"application/graphql-response+json", mt}}}
	}
	other := &oaResponse{Description: "What GraphQL over HTTP answers otherwise (a request that is not GraphQL, a WebSocket upgrade, an unsupported method)."}
	security := append(g.requirements(), oaRequirement{})
	item := pathItem(paths, "/graphql")
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	item.Post = &oaOperation{OperationID: "graphql", Tags: []string{"graphql"}, Summary: "Run a GraphQL operation",
		Description: "Queries and mutations go through the same rule layer as REST, with the same credentials (optional here: each field says what it needs).",
		Security:    &security,
		RequestBody: &oaRequestBody{Required: true, Content: ordered[*oaMediaType]{
			{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "GraphQLRequest")}}}}}}
	item.Post.Responses.set("200", result())
	item.Post.Responses = g.rootErrors(item.Post.Responses, 429)
	item.Post.Responses.set("default", other)
	q := func(name, desc string, required bool) *oaParam {
		return &oaParam{Name: name, In: "query", Description: desc, Required: required, Schema: &schema{Type: "string"}}
	}
	item.Get = &oaOperation{OperationID: "graphqlGet", Tags: []string{"graphql"}, Summary: "Run a GraphQL query (GET)",
		Description: "A query (not a mutation) in the URL.", Security: &security,
		Parameters: []*oaParam{q("query", "The GraphQL document.", true), q("operationName", "The operation to run.", false),
			q("variables", "The variables, as JSON.", false), q("extensions", "Protocol extensions, as JSON.", false)}}
	item.Get.Responses.set("200", result())
	item.Get.Responses = g.rootErrors(item.Get.Responses, 429)
	item.Get.Responses.set("default", other)
}
