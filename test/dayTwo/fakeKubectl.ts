// A kubectl that keeps a cluster's cordon state, so a test can run the real KubectlDrainer (its
// argument lists) through rollout. It writes each call into a log shared with the fake Talos
// cluster (`cordon w-1`, `drain w-1`, `uncordon w-1`), so a test sees drains and reboots in one
// order (`ready w-1` for a Ready query), and it records the --kubeconfig file as it found it at call time (mode, content).
// `get nodes` answers only a kubeconfig the test's `accepts` lets through, as an API server refuses
// a client certificate of a CA it does not accept (rotate-ca --kubernetes).
import * as fs from "node:fs";
import * as path from "node:path";
import type { CommandResult, CommandRunner } from "../../automation/dayTwo/toolRunner";

/** One kubectl run as the drainer made it. */
export interface KubectlCall {
  readonly command: string;
  readonly args: readonly string[];
  readonly timeoutMs: number;
  /** The --kubeconfig file at call time; undefined when it did not exist. */
  readonly kubeconfig?: {
    readonly path: string;
    readonly mode: number;
    readonly dirMode: number;
    readonly content: string;
  };
}

/** The fake kubectl and the knobs a test turns. */
export interface FakeKubectl {
  readonly run: CommandRunner;
  readonly calls: KubectlCall[];
  /** Nodes marked unschedulable. */
  readonly cordoned: Set<string>;
  /** Nodes whose drain fails (a disruption budget that never allows the eviction). */
  readonly drainFails: Set<string>;
  /** Nodes whose uncordon fails. */
  readonly uncordonFails: Set<string>;
  /** Nodes whose kubelet never reports Ready (their Node's Ready condition stays Unknown). */
  readonly notReady: Set<string>;
  /** kubectl is not installed: starting it fails with ENOENT. */
  missing: boolean;
  /** Nodes whose Node object was deleted, in order. */
  readonly deleted: string[];
  /** The Nodes `get nodes` lists (Ready unless in notReady). */
  listed: readonly string[];
  /**
   * Whether the API server accepts a kubeconfig (by its content): its client certificate from a CA
   * the control planes accept and its CA the one of their serving certificates. @default every one
   */
  accepts: (kubeconfig: string) => boolean;
}

/** A kubectl runner; every call is also pushed to `log`. */
export function fakeKubectl(log: string[]): FakeKubectl {
  const state: FakeKubectl = {
    calls: [],
    cordoned: new Set(),
    drainFails: new Set(),
    uncordonFails: new Set(),
    notReady: new Set(),
    missing: false,
    deleted: [],
    listed: [],
    accepts: () => true,
    run: async (command, args, options) => {
      if (state.missing) {
        throw Object.assign(new Error(`spawn ${command} ENOENT`), { code: "ENOENT" });
      }
      const at = args.indexOf("--kubeconfig");
      const file = at < 0 ? undefined : args[at + 1];
      state.calls.push({
        command,
        args,
        timeoutMs: options.timeoutMs,
        ...(file && fs.existsSync(file)
          ? {
              kubeconfig: {
                path: file,
                mode: fs.statSync(file).mode & 0o777,
                dirMode: fs.statSync(path.dirname(file)).mode & 0o777,
                content: fs.readFileSync(file, "utf8"),
              },
            }
          : {}),
      });
      return answer(args, file && fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "");
    },
  };
  const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: "", timedOut: false });
  const failed = (stderr: string): CommandResult => ({
    code: 1,
    stdout: "",
    stderr,
    timedOut: false,
  });

  function answer(args: readonly string[], kubeconfig: string): CommandResult {
    const [verb, node] = args;
    if (verb === "version") return ok("Client Version: v1.36.3\nKustomize Version: v5.7.1\n");
    if (verb === "get" && node === "nodes") {
      // `get nodes -o jsonpath={range .items[*]}…`: a name and its Ready status per line.
      log.push("get nodes");
      if (!state.accepts(kubeconfig)) {
        return failed("error: You must be logged in to the server (Unauthorized)\n");
      }
      return ok(
        state.listed
          .map((name) => `${name} ${state.notReady.has(name) ? "Unknown" : "True"}\n`)
          .join(""),
      );
    }
    if (verb === "get" && node === "node") {
      // `get node <name> -o jsonpath={…Ready…status}`: the Ready condition's status alone.
      const name = args[2];
      log.push(`ready ${name}`);
      return ok(state.notReady.has(name) ? "Unknown" : "True");
    }
    if (verb === "delete" && node === "node") {
      const name = args[2];
      log.push(`delete node ${name}`);
      state.deleted.push(name);
      return ok(`node "${name}" deleted\n`);
    }
    log.push(`${verb} ${node}`);
    switch (verb) {
      case "cordon":
        state.cordoned.add(node);
        return ok(`node/${node} cordoned\n`);
      case "drain":
        // kubectl drain cordons first, and leaves the node cordoned when the eviction fails.
        state.cordoned.add(node);
        if (state.drainFails.has(node)) {
          return failed(
            `evicting pod shop/web-0\nerror when evicting pods/"web-0" -n "shop" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\n` +
              `error: unable to drain node "${node}" due to error: [error when evicting pods/"web-0" -n "shop": global timeout reached: 5m0s], continuing command...\n`,
          );
        }
        return ok(
          `node/${node} already cordoned\nWarning: ignoring DaemonSet-managed Pods: kube-system/kube-flannel-x2vq4\nevicting pod shop/web-0\npod/web-0 evicted\nnode/${node} drained\n`,
        );
      case "uncordon":
        if (state.uncordonFails.has(node)) {
          return failed(`error: Unauthorized\n`);
        }
        state.cordoned.delete(node);
        return ok(`node/${node} uncordoned\n`);
      default:
        return failed(`error: unknown command "${verb}" for "kubectl"\n`);
    }
  }
  return state;
}
