// A Talos session: the cluster's talosconfig written to a private temp file for talosctl, and
// removed when the command ends (also when it crashes: on process exit).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { writePrivateFile } from "../files";
import type { DeployedCluster } from "./cluster";
import { controlPlanes } from "./cluster";
import type { DayTwoDeps } from "./deps";
import type { TalosClient, TalosConnection } from "./talosClient";

/** Runs `fn` with a client for the cluster; the talosconfig file exists only meanwhile. */
export async function withTalos<T>(
  deps: DayTwoDeps,
  cluster: DeployedCluster,
  fn: (client: TalosClient, connection: TalosConnection) => Promise<T>,
): Promise<T> {
  // mkdtemp creates the folder with mode 0700; the file inside is 0600.
  const dir = fs.mkdtempSync(path.join(deps.tmpDir ?? os.tmpdir(), "platform-talos-"));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on("exit", cleanup);
  try {
    const talosconfig = path.join(dir, "talosconfig");
    writePrivateFile(talosconfig, cluster.talosconfig);
    const connection: TalosConnection = {
      talosconfig,
      endpoints: controlPlanes(cluster).map((cp) => cp.address),
      clusterTalosVersion: cluster.stack.talosVersion,
    };
    return await fn(deps.talos(connection), connection);
  } finally {
    process.off("exit", cleanup);
    cleanup();
  }
}
