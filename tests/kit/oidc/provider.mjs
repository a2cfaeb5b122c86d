// A real OAuth 2.1 / OpenID authorization server for the tests: npm oidc-provider on a loopback port.
//
//   node provider.mjs --port N [--access-ttl SECONDS] [--auto-consent] [--clients FILE.json]
//                     [--resource-scope SCOPE ...]
//
// What it offers: dynamic client registration (RFC 7591, open: no initial access token), PKCE
// (S256, required), refresh tokens for every client that may use them (rotated on each use),
// resource indicators (RFC 8707): a token for any http(s) resource is a JWT (RS256) with that
// resource as its audience, verifiable against the provider's JWKS; client credentials,
// introspection and revocation (for the resource-server tests). The person signs in through
// oidc-provider's development interactions (a login form that takes any name, then a consent
// page); --auto-consent grants what is asked so only the login form is shown.
// It prints "LISTENING <issuer>" once it serves, and exits on SIGTERM.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

// The pinned package lives in the bootstrap cache, not beside this script: $OIDC_PROVIDER_ENTRY is its folder.
const { Provider, errors, interactionPolicy } = await loadProvider(process.env.OIDC_PROVIDER_ENTRY);

async function loadProvider(dir) {
  if (!dir) throw new Error("set OIDC_PROVIDER_ENTRY to the oidc-provider package folder");
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  let entry = pkg.exports?.["."] ?? pkg.exports ?? pkg.main ?? "index.js";
  while (typeof entry === "object") entry = entry.import ?? entry.default;
  return await import(pathToFileURL(join(dir, entry)).href);
}

const { values } = parseArgs({
  options: {
    port: { type: "string" },
    "access-ttl": { type: "string", default: "3600" },
    "auto-consent": { type: "boolean", default: false },
    clients: { type: "string" },
    "resource-scope": { type: "string", multiple: true, default: ["mcp:tools"] },
  },
});
if (!values.port) {
  console.error("usage: node provider.mjs --port N [--access-ttl S] [--auto-consent] [--clients FILE]");
  process.exit(2);
}
const port = Number(values.port);
const accessTtl = Number(values["access-ttl"]);
const issuer = `http://127.0.0.1:${port}`;
const resourceScopes = values["resource-scope"].join(" ");

// A fresh signing key per run: nothing secret is kept on disk.
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: "jwk" }), kid: `test-${randomBytes(4).toString("hex")}`, use: "sig", alg: "RS256" };

const clients = values.clients ? JSON.parse(readFileSync(values.clients, "utf8")) : [];

const configuration = {
  clients,
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  pkce: { required: () => true },
  scopes: ["openid", "offline_access"],
  ttl: {
    AccessToken: accessTtl,
    ClientCredentials: accessTtl,
    AuthorizationCode: 120,
    Grant: 3600,
    Interaction: 600,
    Session: 3600,
    IdToken: 3600,
    RefreshToken: 86400,
  },
  // Refresh tokens whether or not offline_access was asked for (an MCP client need not ask), rotated each use.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  rotateRefreshToken: () => true,
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => {
        if (!/^https?:\/\//.test(resourceIndicator)) {
          throw new errors.InvalidTarget("this test server issues tokens for http(s) resources only");
        }
        return {
          scope: resourceScopes,
          audience: resourceIndicator,
          accessTokenTTL: accessTtl,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
};

if (values["auto-consent"]) {
  // Grant whatever the client asked for, so the person only signs in: no consent prompt, not even
  // the one oidc-provider always shows native (loopback redirect) clients.
  const policy = interactionPolicy.base();
  policy.get("consent").checks.remove("native_client_prompt");
  configuration.interactions = { policy };
  configuration.loadExistingGrant = async (ctx) => {
    const { oidc } = ctx;
    const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
    grant.addOIDCScope(oidc.params.scope ?? "");
    for (const resource of Object.keys(oidc.resourceServers ?? {})) {
      grant.addResourceScope(resource, oidc.resourceServers[resource].scope);
    }
    await grant.save();
    return grant;
  };
}

const provider = new Provider(issuer, configuration);
provider.on("server_error", (ctx, error) => console.error("server_error", error));
const server = provider.listen(port, "127.0.0.1", () => {
  console.log(`LISTENING ${issuer}`);
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
