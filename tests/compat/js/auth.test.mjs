// Authorization through @azure/data-tables (Azure docs: "Authorize requests to Azure Storage"): AzureNamedKeyCredential, SDK-generated
// table and account SAS with AzureSASCredential (read-only, key ranges, stored policies), and
// a TokenCredential over HTTPS with a self-signed certificate against a tablestore process
// started here (TABLESTORE_BIN, set by ./test.sh; the certificate is made by openssl).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AzureNamedKeyCredential,
  AzureSASCredential,
  TableClient,
  TableServiceClient,
  generateAccountSas,
  generateTableSas,
} from "@azure/data-tables";
import {
  ACCOUNT_KEY,
  ACCOUNT_NAME,
  CLIENT_OPTIONS,
  all,
  endpoint,
  rejectsWith,
  serverBinary,
  startChildServer,
  uniqueTableName,
} from "./helpers.mjs";

const accountUrl = () => `${endpoint()}/${ACCOUNT_NAME}`;
const namedKey = () => new AzureNamedKeyCredential(ACCOUNT_NAME, ACCOUNT_KEY);
const inAnHour = () => new Date(Date.now() + 3600 * 1000);
const sasTable = (name, sas) => new TableClient(accountUrl(), name, new AzureSASCredential(sas), CLIENT_OPTIONS);
const keysOf = (entities) => entities.map((e) => `${e.partitionKey}${e.rowKey}`).sort();
const GRID = ["a", "b", "c"].flatMap((pk) => ["1", "2", "3"].map((rk) => `${pk}${rk}`));

describe("auth", () => {
  const name = uniqueTableName("JsAuth");
  const owner = new TableClient(accountUrl(), name, namedKey(), CLIENT_OPTIONS);

  before(async () => {
    await owner.createTable();
    for (const key of GRID) {
      await owner.createEntity({ partitionKey: key[0], rowKey: key[1], v: key });
    }
  });

  after(async () => {
    try {
      await owner.deleteTable();
    } catch {
      // cleanup only
    }
  });

  test("AzureNamedKeyCredential reads and writes", async () => {
    const service = new TableServiceClient(accountUrl(), namedKey(), CLIENT_OPTIONS);
    const names = (await all(service.listTables())).map((t) => t.name);
    assert.ok(names.includes(name));
    assert.equal((await owner.getEntity("b", "2")).v, "b2");
  });

  test("a wrong key is 403 AuthenticationFailed", async () => {
    const wrong = new AzureNamedKeyCredential(ACCOUNT_NAME, Buffer.from("not the key at all, no").toString("base64"));
    const client = new TableClient(accountUrl(), name, wrong, CLIENT_OPTIONS);
    await rejectsWith(() => client.getEntity("a", "1"), 403, "AuthenticationFailed");
  });

  test("read-only table SAS reads but cannot write", async () => {
    const sas = generateTableSas(name, namedKey(), { permissions: { query: true }, expiresOn: inAnHour() });
    const reader = sasTable(name, sas);
    assert.deepEqual(keysOf(await all(reader.listEntities())), GRID);
    await rejectsWith(
      () => reader.createEntity({ partitionKey: "z", rowKey: "z" }),
      403,
      "AuthorizationPermissionMismatch",
    );
    await rejectsWith(() => reader.deleteEntity("a", "1"), 403, "AuthorizationPermissionMismatch");
    // A service SAS never lists tables.
    const service = new TableServiceClient(accountUrl(), new AzureSASCredential(sas), CLIENT_OPTIONS);
    await rejectsWith(() => all(service.listTables()), 403, "AuthorizationFailure");
  });

  test("key-range table SAS sees and writes only its range", async () => {
    const sas = generateTableSas(name, namedKey(), {
      permissions: { query: true, add: true },
      expiresOn: inAnHour(),
      startPartitionKey: "b",
      startRowKey: "2",
      endPartitionKey: "c",
      endRowKey: "1",
    });
    const ranged = sasTable(name, sas);
    const inside = ["b2", "b3", "c1"];
    assert.deepEqual(keysOf(await all(ranged.listEntities())), inside);
    const filtered = ranged.listEntities({ queryOptions: { filter: "PartitionKey ge 'a'" } });
    assert.deepEqual(keysOf(await all(filtered)), inside);
    await rejectsWith(() => ranged.getEntity("a", "1"), 403, "AuthorizationFailure");
    await rejectsWith(() => ranged.createEntity({ partitionKey: "a", rowKey: "9" }), 403, "AuthorizationFailure");
  });

  test("stored access policy SAS works until the policy is removed", async () => {
    const policyTable = uniqueTableName("JsPolicy");
    const policyOwner = new TableClient(accountUrl(), policyTable, namedKey(), CLIENT_OPTIONS);
    await policyOwner.createTable();
    try {
      await policyOwner.createEntity({ partitionKey: "p", rowKey: "r" });
      const start = new Date(Date.now() - 5 * 60 * 1000);
      await policyOwner.setAccessPolicy([{ id: "readers", accessPolicy: { permission: "r", start, expiry: inAnHour() } }]);
      const reader = sasTable(policyTable, generateTableSas(policyTable, namedKey(), { identifier: "readers" }));
      assert.deepEqual(keysOf(await all(reader.listEntities())), ["pr"]);
      await policyOwner.setAccessPolicy([]);
      await rejectsWith(() => all(reader.listEntities()), 403, "AuthenticationFailed");
    } finally {
      await policyOwner.deleteTable();
    }
  });

  test("account SAS: read/list lists tables and entities, cannot create", async () => {
    const sas = generateAccountSas(namedKey(), {
      permissions: { query: true, list: true },
      resourceTypes: "sco",
      expiresOn: inAnHour(),
    });
    const service = new TableServiceClient(accountUrl(), new AzureSASCredential(sas), CLIENT_OPTIONS);
    const names = (await all(service.listTables())).map((t) => t.name);
    assert.ok(names.includes(name));
    assert.deepEqual(keysOf(await all(sasTable(name, sas).listEntities())), GRID);
    await rejectsWith(() => service.createTable(uniqueTableName("JsNo")), 403, "AuthorizationPermissionMismatch");
    await rejectsWith(
      () => sasTable(name, sas).createEntity({ partitionKey: "z", rowKey: "z" }),
      403,
      "AuthorizationPermissionMismatch",
    );
  });

  test("account SAS for objects only cannot list tables", async () => {
    const sas = generateAccountSas(namedKey(), {
      permissions: { query: true, list: true },
      resourceTypes: "o",
      expiresOn: inAnHour(),
    });
    const service = new TableServiceClient(accountUrl(), new AzureSASCredential(sas), CLIENT_OPTIONS);
    await rejectsWith(() => all(service.listTables()), 403, "AuthorizationResourceTypeMismatch");
  });
});

// --- HTTPS with a TokenCredential: a tablestore process of our own --------------------------

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
const httpsSkip = !serverBinary()
  ? "TABLESTORE_BIN is not set and no target/*/tablestore was built"
  : !hasOpenssl
    ? "openssl is needed to make a test certificate"
    : false;

/** A well-formed JWT nobody signed (the server checks form, audience and lifetime). */
function unsignedJwt(audience) {
  const part = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    aud: audience,
    iss: "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
    iat: now - 60,
    nbf: now - 60,
    exp: now + 3600,
  };
  return `${part({ alg: "RS256", typ: "JWT" })}.${part(claims)}.bm90LXNpZ25lZA`;
}

describe("auth over HTTPS", { skip: httpsSkip }, () => {
  let dir;
  let certPem;
  let server;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tablestore-js-tls-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    const made = spawnSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ]);
    assert.equal(made.status, 0, String(made.stderr));
    certPem = readFileSync(cert, "utf8");
    server = await startChildServer(["--silent", "--cert", cert, "--key", key, "--oauth", "basic"]);
  });

  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("TokenCredential creates a table and an entity", async () => {
    assert.match(server.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
    const scopes = [];
    const credential = {
      getToken: async (requested) => {
        scopes.push(requested);
        return { token: unsignedJwt("https://storage.azure.com"), expiresOnTimestamp: Date.now() + 3600 * 1000 };
      },
    };
    // Trust the self-signed certificate for this client only (NODE_EXTRA_CA_CERTS does the
    // same for a whole process).
    const options = { retryOptions: { maxRetries: 0 }, tlsOptions: { ca: certPem } };
    const url = `${server.endpoint}/${ACCOUNT_NAME}`;
    const service = new TableServiceClient(url, credential, options);
    await service.createTable("jstokens");
    const table = new TableClient(url, "jstokens", credential, options);
    await table.createEntity({ partitionKey: "p", rowKey: "r", v: 42 });
    assert.equal((await table.getEntity("p", "r")).v, 42);
    assert.deepEqual((await all(service.listTables())).map((t) => t.name), ["jstokens"]);
    assert.ok(scopes.flat().includes("https://storage.azure.com/.default"), JSON.stringify(scopes));
  });

  test("a token for another audience is refused", async () => {
    const credential = {
      getToken: async () => ({
        token: unsignedJwt("https://management.azure.com"),
        expiresOnTimestamp: Date.now() + 3600 * 1000,
      }),
    };
    const options = { retryOptions: { maxRetries: 0 }, tlsOptions: { ca: certPem } };
    const table = new TableClient(`${server.endpoint}/${ACCOUNT_NAME}`, "jstokens", credential, options);
    await rejectsWith(() => table.getEntity("p", "r"), 401);
  });

  // The tokens of Azurite's own OAuth tests (its generateJWTToken: nbf/iat/exp in seconds, scp,
  // oid, tid): Microsoft's pre-production issuer, which Azurite's docs and tests use, and the
  // sovereign clouds are accepted; a foreign issuer, a wrong audience and a token outside its
  // lifetime get Azure's 401 InvalidAuthenticationInfo with the reason.
  test("the token forms of Azurite's test suite", async () => {
    const tenant = "ab1f708d-50f6-404c-a006-d71b2ac7a606";
    const at = (day) => Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000);
    const part = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const suiteToken = ({ iss, aud, nbf = "2019-01-01", exp = "2100-01-01" }) =>
      `${part({ alg: "RS256", typ: "JWT" })}.${part({
        nbf: at(nbf), iat: at("2019-01-01"), exp: at(exp), iss, aud,
        scp: "user_impersonation", oid: "23657296-5cd5-45b0-a809-d972a7f4dfe1",
        tid: "dd0d0df1-06c3-436c-8034-4b9a153097ce",
      })}.bm90LXNpZ25lZA`;
    const options = { retryOptions: { maxRetries: 0 }, tlsOptions: { ca: certPem } };
    const clientFor = (claims, name) =>
      new TableClient(`${server.endpoint}/${ACCOUNT_NAME}`, name, {
        getToken: async () => ({ token: suiteToken(claims), expiresOnTimestamp: Date.now() + 3600 * 1000 }),
      }, options);
    const ppe = `https://sts.windows-ppe.net/${tenant}/`;

    for (const aud of [
      "https://storage.azure.com", "https://storage.azure.com/", "e406a681-f3d4-42a8-90b6-c2b029497af1",
      `https://${ACCOUNT_NAME}.table.core.windows.net/`, `https://${ACCOUNT_NAME}.table.core.chinacloudapi.cn`,
      `https://${ACCOUNT_NAME}.table.core.usgovcloudapi.net`, `https://${ACCOUNT_NAME}.table.core.cloudapi.de/`,
    ]) {
      const table = clientFor({ iss: ppe, aud }, "jsppe");
      await table.createTable();
      await table.deleteTable();
    }
    for (const iss of [
      `https://sts.windows.net/${tenant}/`, `https://sts.microsoftonline.de/${tenant}/`,
      `https://sts.chinacloudapi.cn/${tenant}/`, `https://sts.windows-ppe.net/${tenant}`,
    ]) {
      const table = clientFor({ iss, aud: "https://storage.azure.com" }, "jsissuers");
      await table.createTable();
      await table.deleteTable();
    }

    const tableAud = `https://${ACCOUNT_NAME}.table.core.windows.net`;
    for (const [claims, detail] of [
      [{ iss: `https://invalidissuer/${tenant}/`, aud: tableAud }, "Issuer validation failed."],
      [{ iss: ppe, aud: "https://invalidaccount.table.core.windows.net" }, "Audience validation failed."],
      [{ iss: ppe, aud: tableAud, nbf: "2119-01-01" }, "Lifetime validation failed. The token is not yet valid."],
      [{ iss: ppe, aud: tableAud, exp: "2019-01-01" }, "Lifetime validation failed. The token is expired."],
    ]) {
      const e = await rejectsWith(() => clientFor(claims, "jsrefused").createTable(), 401, "InvalidAuthenticationInfo");
      assert.ok(e.message.includes(detail), `${detail}: ${e.message}`);
    }
  });

  test("an https-only SAS works over HTTPS", async () => {
    const owner = TableServiceClient.fromConnectionString(
      `DefaultEndpointsProtocol=https;AccountName=${ACCOUNT_NAME};AccountKey=${ACCOUNT_KEY};` +
        `TableEndpoint=${server.endpoint}/${ACCOUNT_NAME};`,
      { retryOptions: { maxRetries: 0 }, tlsOptions: { ca: certPem } },
    );
    await owner.createTable("jssas");
    const sas = generateTableSas("jssas", namedKey(), {
      permissions: { query: true, add: true },
      expiresOn: inAnHour(),
      protocol: "https",
    });
    const client = new TableClient(`${server.endpoint}/${ACCOUNT_NAME}`, "jssas", new AzureSASCredential(sas), {
      retryOptions: { maxRetries: 0 },
      tlsOptions: { ca: certPem },
    });
    await client.createEntity({ partitionKey: "p", rowKey: "r" });
    assert.equal((await all(client.listEntities())).length, 1);
  });
});
