// The user at the bundled authorization server's consent page, for the official suite's
// `authorization` run in `cargo xtask interop`: opens the authorization URL the suite
// printed, logs in and approves, and follows the redirect to the suite's callback.
//
//   node as-consent.mjs <authorization URL> <user> <password>
import assert from 'node:assert/strict';

const [url, user, password] = process.argv.slice(2);
if (!url || !user || password === undefined) {
  console.error('usage: as-consent.mjs <authorization URL> <user> <password>');
  process.exit(2);
}
const page = await fetch(url);
assert.equal(page.status, 200, 'the consent page');
const txn = (await page.text()).match(/name="txn" value="([^"]*)"/)?.[1];
assert.ok(txn, 'the consent form');
const answer = await fetch(url.split('?')[0], {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ txn, username: user, password, decision: 'approve' }),
  redirect: 'manual',
});
assert.equal(answer.status, 302, 'approval redirects back');
const back = await fetch(answer.headers.get('location'));
assert.equal(back.status, 200, "the suite's callback");
console.log('as-consent: approved');
