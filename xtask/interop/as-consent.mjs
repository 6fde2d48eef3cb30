// The user at the bundled authorization server's consent page, for the official suite's
// `authorization` run in `cargo xtask interop`: opens the authorization URL the suite
// printed, logs in and approves (oauth-flow.mjs), and follows the redirect to the suite's
// callback.
//
//   node as-consent.mjs <authorization URL> <user> <password>
import assert from 'node:assert/strict';
import { approve, urlUserPassword } from './oauth-flow.mjs';

const { url, user, password } = urlUserPassword('as-consent.mjs', 'authorization URL');
const back = await fetch(await approve(new URL(url), user, password));
assert.equal(back.status, 200, "the suite's callback");
console.log('as-consent: approved');
