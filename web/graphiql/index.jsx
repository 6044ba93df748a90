// GraphiQL for resourceapi: queries and mutations over POST /graphql,
// subscriptions over the WebSocket at /graphql (graphql-transport-ws, with
// the graphql-ws client). The headers of GraphiQL's Headers tab go with
// every request, and into connection_init for subscriptions (for example
// {"X-API-Key": "rk_..."} or {"Authorization": "Bearer ..."}).
import React from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { createClient } from 'graphql-ws';
import { getOperationAST, parse } from 'graphql';
import 'graphiql/style.css';

const url = new URL('/graphql', window.location.href).toString();
const wsUrl = url.replace(/^http/, 'ws');
const httpFetcher = createGraphiQLFetcher({ url });

// One WebSocket client per set of headers: new headers, new connection.
let ws = null;
let wsHeaders = null;
function wsClient(headers) {
  const key = JSON.stringify(headers || {});
  if (ws === null || key !== wsHeaders) {
    if (ws !== null) ws.dispose();
    ws = createClient({ url: wsUrl, connectionParams: headers || {}, lazy: true });
    wsHeaders = key;
  }
  return ws;
}

function isSubscription(params) {
  try {
    const op = getOperationAST(parse(params.query), params.operationName || undefined);
    return op !== null && op !== undefined && op.operation === 'subscription';
  } catch {
    return false;
  }
}

function fetcher(params, opts) {
  if (isSubscription(params)) {
    return wsClient(opts && opts.headers).iterate(params);
  }
  return httpFetcher(params, opts);
}

const initialQuery = `# Welcome to resourceapi's GraphQL. Queries other than hello need a
# credential: add {"X-API-Key": "..."} in the Headers tab below.
{
  hello
}
`;

createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, { fetcher, defaultQuery: initialQuery, shouldPersistHeaders: false }),
);
