// A JS test helper for tablestore's production realism (docs/realism.md): starts a tablestore
// process with realism options and installs fault rules through PUT /_tablestore/faults,
// signed with the account key (Shared Key Lite).
//
//   const server = await startRealismServer(["--page-breaks", "random"]);
//   await server.faults.put({ seed: 1, rules: [{ operation: "write", probability: 0.3,
//     action: "error", error: "ServerBusy" }] });
//   const client = TableClient.fromConnectionString(server.connectionString, "t",
//     { allowInsecureConnection: true });
//   ...
//   await server.stop();
import { createHmac } from "node:crypto";
import { ACCOUNT_KEY, ACCOUNT_NAME, startChildServer } from "./helpers.mjs";

const FAULTS_PATH = "/_tablestore/faults";

function faultsClient(endpoint) {
  const call = async (method, body) => {
    const date = new Date().toUTCString();
    const signature = createHmac("sha256", Buffer.from(ACCOUNT_KEY, "base64"))
      .update(`${date}\n/${ACCOUNT_NAME}${FAULTS_PATH}`)
      .digest("base64");
    const response = await fetch(endpoint + FAULTS_PATH, {
      method,
      body,
      headers: { "x-ms-date": date, Authorization: `SharedKeyLite ${ACCOUNT_NAME}:${signature}` },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${FAULTS_PATH}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    put: (rules) => call("PUT", typeof rules === "string" ? rules : JSON.stringify(rules)),
    get: () => call("GET"),
    clear: () => call("DELETE"),
  };
}

/** Starts tablestore (helpers.mjs startChildServer) with `args`, plus its connection string and faults. */
export async function startRealismServer(args = []) {
  const server = await startChildServer(args);
  return {
    ...server,
    connectionString:
      "DefaultEndpointsProtocol=http;" +
      `AccountName=${ACCOUNT_NAME};AccountKey=${ACCOUNT_KEY};` +
      `TableEndpoint=${server.endpoint}/${ACCOUNT_NAME};`,
    faults: faultsClient(server.endpoint),
  };
}
