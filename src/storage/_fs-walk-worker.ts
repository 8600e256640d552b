/** Worker thread entry of walkTreeOffThread: one synchronous walk, posted back packed. */
import { parentPort, workerData } from "node:worker_threads";
import { packEntries, walkTreeSync } from "./_fs-walk.js";

const packed = packEntries(walkTreeSync((workerData as { root: string }).root));
parentPort?.postMessage(packed, [packed.sizes.buffer, packed.types.buffer]);
