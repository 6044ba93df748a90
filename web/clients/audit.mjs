// Runs the graphql-http package's GraphQL-over-HTTP server audits against
// the URL in argv[2] (http://host:port/graphql). Every audit must pass: an
// "error" (a MUST) or a "warn" (a SHOULD) fails the run.
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs http://host:port/graphql');
  process.exit(2);
}
let failed = 0;
let passed = 0;
for (const audit of serverAudits({ url })) {
  const result = await audit.fn();
  if (result.status === 'ok') {
    passed++;
    continue;
  }
  failed++;
  console.log(`${result.status.toUpperCase()} ${audit.name}: ${result.reason}`);
  if (result.response) {
    const body = await result.response.text().catch(() => '');
    console.log(`  status ${result.response.status} ${result.response.headers.get('content-type')}: ${body.slice(0, 300)}`);
  }
}
console.log(`graphql-http audit: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
