// The realism helper this suite uses is the one the npm package ships
// (packaging/npm/tablestore/index.mjs, `startRealismServer` and `server.faults`), imported
// from the source tree so there is one copy; here it runs the binary under test
// (TABLESTORE_BIN, else target/*/tablestore: helpers.mjs serverBinary).
import { startRealismServer as shipped } from "../../../packaging/npm/tablestore/index.mjs";
import { serverBinary } from "./helpers.mjs";

/** Starts tablestore in memory with `args`; resolves to the shipped helper's server. */
export function startRealismServer(args = []) {
  return shipped(args, { binary: serverBinary() });
}
