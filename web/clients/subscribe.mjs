// Subscribes to userCreated with the graphql-ws client (the graphql-transport-ws
// protocol) at argv[2] (ws://host:port/graphql), with the API key in
// argv[3] in connection_init, then creates users with a GraphQL mutation over
// HTTP until the subscription delivers one of them. Fails after 30 s.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [wsUrl, key] = process.argv.slice(2);
if (!wsUrl || !key) {
  console.error('usage: node subscribe.mjs ws://host:port/graphql API_KEY');
  process.exit(2);
}
const httpUrl = wsUrl.replace(/^ws/, 'http');
const timer = setTimeout(() => {
  console.error('graphql-ws: no userCreated event within 30 s');
  process.exit(1);
}, 30_000);

let connected;
const ready = new Promise((resolve) => { connected = resolve; });
const client = createClient({
  url: wsUrl,
  webSocketImpl: WebSocket,
  connectionParams: { 'X-API-Key': key },
  retryAttempts: 0,
  on: { connected: () => connected() },
});

const created = new Set();
const received = new Promise((resolve, reject) => {
  client.subscribe(
    { query: 'subscription { userCreated { id name email } }' },
    {
      next: (msg) => {
        if (msg.errors) reject(new Error(JSON.stringify(msg.errors)));
        const u = msg.data && msg.data.userCreated;
        if (u && created.has(u.name)) resolve(u);
      },
      error: (err) => reject(err instanceof Error ? err : new Error(JSON.stringify(err))),
      complete: () => reject(new Error('the subscription completed')),
    },
  );
});

async function createUser(n) {
  const name = `graphql-ws client ${process.pid}-${n}`;
  created.add(name);
  const res = await fetch(httpUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
    body: JSON.stringify({
      query: 'mutation($name: String!, $email: String!) { createUser(name: $name, email: $email) { id } }',
      variables: { name, email: `ws-${process.pid}-${n}@clients.example` },
    }),
  });
  const body = await res.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
}

try {
  await ready;
  // The subscription is registered a moment after the connection is: create
  // until one of the users created since arrives.
  let n = 0;
  let event = null;
  while (event === null) {
    await createUser(n++);
    event = await Promise.race([received, new Promise((r) => setTimeout(() => r(null), 1000))]);
  }
  console.log(`graphql-ws: received userCreated ${JSON.stringify(event)}`);
  clearTimeout(timer);
  await client.dispose();
  process.exit(0);
} catch (err) {
  console.error(`graphql-ws: ${err.message || err}`);
  process.exit(1);
}
