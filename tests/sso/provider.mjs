// A real OpenID provider for the single sign-on tests: panva's oidc-provider with one client
// (Agentboard) and the accounts of a JSON file that it reads again at every sign-in, so a test
// changes a person's groups between two sign-ins by rewriting the file.
//
//   node provider.mjs   with OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI,
//                       OIDC_STATE_FILE (and NODE_PATH naming the installed node_modules)
//
// The file: {"mode": "", "accounts": {"dana": {"name": ..., "email": ..., "groups": [...]}}}.
// "mode" makes the token endpoint hand out a bad ID token, as an attacker would:
// "wrong-audience" (signed with the provider's own key, issued to another client) or
// "wrong-key" (the same claims signed with a key the provider never published), "alg-none"
// (not signed at all) or "hs256" (signed with the client secret); "token-down" makes the token
// endpoint fail as a provider in trouble does (503), "userinfo-refused" the userinfo endpoint
// refuse the access token (401).
//
// oidc-provider always names its key (`kid`) in the tokens it signs and in its key set. A
// provider that names none is made by rewriting both: "no-kid" signs the ID token with the
// provider's key under a header without `kid` and publishes that one key without one;
// "no-kid-two-keys" does the same but publishes a second key beside it.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH, 'noop.js'));
const { default: Provider } = await import(require.resolve('oidc-provider'));
const jose = await import(require.resolve('jose'));

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const stateFile = process.env.OIDC_STATE_FILE;
const state = () => JSON.parse(readFileSync(stateFile, 'utf8'));

async function signingKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid: 'agentboard-test', alg: 'RS256', use: 'sig' };
}
const providerKey = await signingKey();
const strangerKey = await signingKey();

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.OIDC_CLIENT_ID,
      client_secret: process.env.OIDC_CLIENT_SECRET,
      redirect_uris: [process.env.OIDC_REDIRECT_URI],
      post_logout_redirect_uris: [process.env.OIDC_POST_LOGOUT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [providerKey] },
  cookies: { keys: ['test-only-cookie-key'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username', 'groups'],
  },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = state().accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        const now = state().accounts[id] || {};
        return { sub: `subject-${id}`, email_verified: true, preferred_username: id, ...now };
      },
    };
  },
  // Agentboard is the company's own application: no consent screen.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});

const NAMES_NO_KEY = new Set(['no-kid', 'no-kid-two-keys']);

// A key as a provider that names none publishes it: public, without `kid`.
function unnamedPublicKey(key) {
  const { d, p, q, dp, dq, qi, kid, ...published } = key;
  return published;
}

async function resign(idToken, mode) {
  const claims = jose.decodeJwt(idToken);
  if (mode === 'wrong-audience') {
    claims.aud = 'another-application';
    claims.azp = 'another-application';
  }
  if (mode === 'alg-none') {
    const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
    return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
  }
  if (mode === 'hs256') {
    return new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode(process.env.OIDC_CLIENT_SECRET));
  }
  const key = await jose.importJWK(mode === 'wrong-key' ? strangerKey : providerKey, 'RS256');
  const header = NAMES_NO_KEY.has(mode)
    ? { alg: 'RS256', typ: 'JWT' }
    : { alg: 'RS256', kid: providerKey.kid, typ: 'JWT' };
  return new jose.SignJWT(claims).setProtectedHeader(header).sign(key);
}

provider.use(async (ctx, next) => {
  const mode = state().mode || '';
  if (mode === 'token-down' && ctx.path === '/token') {
    ctx.status = 503;
    ctx.body = { error: 'temporarily_unavailable' };
    return;
  }
  if (mode === 'userinfo-refused' && ctx.path === '/me') {
    ctx.status = 401;
    ctx.body = { error: 'invalid_token', error_description: 'the access token was revoked' };
    return;
  }
  await next();
  if (mode && ctx.path === '/token' && ctx.body && ctx.body.id_token) {
    ctx.body = { ...ctx.body, id_token: await resign(ctx.body.id_token, mode) };
  }
  if (NAMES_NO_KEY.has(mode) && ctx.path === '/jwks') {
    const keys = mode === 'no-kid' ? [providerKey] : [providerKey, strangerKey];
    ctx.body = { keys: keys.map(unnamedPublicKey) };
  }
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
