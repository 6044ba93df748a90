// Starts Swagger UI on this server's OpenAPI document. Everything it loads
// comes from this server: the page's Content-Security-Policy allows nothing
// else. The online validator is off (it would send the document away), and
// so is the "Try it out" of every operation until a reader turns it on.

// The page opens on the operations: the document's description keeps its
// first paragraph in view and folds the rest, the conventions (versions,
// credentials, lists, writes, caching...), into a section a reader opens
// when they want them. It also says, once, what the operation list leaves
// out. (The document is OpenAPI 3.1, whose info block reads its description
// through selectInfoDescriptionField.)
const paragraphs = (text) => {
  const cut = (text || "").indexOf("\n\n");
  return cut < 0 ? [text || "", ""] : [text.slice(0, cut), text.slice(cut + 2)];
};
const FoldedConventions = (system) => ({
  statePlugins: {
    spec: {
      wrapSelectors: {
        selectInfoDescriptionField: (original) => (...args) => paragraphs(original(...args))[0],
      },
    },
  },
  wrapComponents: {
    InfoContainer: (Original) => (props) => {
      const h = system.React.createElement;
      const Markdown = system.getComponent("Markdown", true);
      const info = system.specSelectors.info();
      const rest = paragraphs(info && info.get("description"))[1];
      return h("div", null,
        h(Original, props),
        h("div", { className: "wrapper resourceapi-notes" },
          h("p", { className: "every-path" },
            "Every path but /graphql also answers OPTIONS (200 with Allow), and HEAD wherever it answers GET; " +
            "the list below leaves them out, the document at /api/openapi.json has them."),
          rest && h("details", { className: "conventions" },
            h("summary", null, "Conventions of every resource: versions, credentials, lists, writes, caching, rate limits"),
            h(Markdown, { source: rest }))));
    },
  },
});

// HEAD and OPTIONS stay in the document (clients and validators use them)
// but out of the list a person reads; the sentence above says every path
// answers them.
const ReadableMethods = () => ({
  statePlugins: {
    spec: {
      wrapSelectors: {
        taggedOperations: (original) => (...args) =>
          original(...args).map((tag) => tag.update("operations", (ops) =>
            ops.filter((op) => !["head", "options"].includes(op.get("method"))))),
      },
    },
  },
});

window.ui = SwaggerUIBundle({
  url: "/api/openapi.json",
  dom_id: "#api-reference",
  validatorUrl: null,
  deepLinking: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  displayRequestDuration: true,
  oauth2RedirectUrl: window.location.origin + "/docs/oauth2-redirect.html",
  plugins: [FoldedConventions, ReadableMethods],
});
window.ui.initOAuth({ usePkceWithAuthorizationCodeGrant: true, scopes: ["api"] });
