// A talosctl that answers from the fake cluster in talosctl v1.13's own output formats, so a test can
// run the real TalosctlClient (its argument lists and every parser) through the command line. The
// formats are taken from the talosctl v1.13.9 source: `version` (the long template under `Server:`),
// `get … -o yaml` (a `node:` line, then the resource with four-space indentation), `etcd members`
// and `service <id>` (Go tabwriter tables, three spaces of padding) and `health` (server side: one
// `waiting for <check>: <status>` line per change on stderr, the gRPC error as the last line).
import type { CommandResult, CommandRunner } from "../../automation/dayTwo/toolRunner";
import type { FakeTalos } from "./fakeTalos";

/** One talosctl run as the client made it. */
export interface TalosctlCall {
  readonly args: readonly string[];
  readonly timeoutMs: number;
}

/** Go's tabwriter with padding 3: every column as wide as its widest cell plus three spaces. */
export function tabwrite(rows: readonly (readonly string[])[]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] + 3)))
        .join("")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

/** The value after a flag (`--nodes 192.0.2.11`), if present. */
function flag(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args[at + 1];
}

/** The command talosctl runs: its subcommand words (`etcd members`, `get machineconfig v1alpha1`). */
function commandOf(args: readonly string[]): string {
  const [first, second, third] = args;
  if (first === "etcd" || first === "service") return `${first} ${second}`;
  if (first === "get")
    return second === "machineconfig" ? `get ${second} ${third}` : `get ${second}`;
  return first;
}

const CLIENT_BUILD =
  "\tSHA:         3b6e5a7c\n\tBuilt:       \n\tGo version:  go1.25.3\n\tOS/Arch:     linux/amd64\n";

/** The order in which talosctl health (v1.13, DefaultClusterChecks) runs its checks. */
const HEALTH_CHECKS = [
  "etcd to be healthy",
  "etcd members to be consistent across nodes",
  "etcd members to be control plane nodes",
  "apid to be ready",
  "all nodes memory sizes",
  "all nodes disk sizes",
  "no diagnostics",
  "kubelet to be healthy",
  "all nodes to finish boot sequence",
  "all k8s nodes to report",
  "all control plane static pods to be running",
  "all control plane components to be ready",
  "all k8s nodes to report ready",
  "kube-proxy to report ready",
  "coredns to report ready",
  "all k8s nodes to report schedulable",
];

/** Seconds of a Go duration as the client writes it (`600s`). */
function seconds(value: string | undefined): number {
  const match = /^(\d+)s$/.exec(value ?? "");
  if (!match) throw new Error(`fake talosctl: unexpected duration ${JSON.stringify(value)}`);
  return Number(match[1]) * 1000;
}

/** A talosctl runner over a fake cluster; `calls` records every run. */
export function fakeTalosctl(fake: FakeTalos): { run: CommandRunner; calls: TalosctlCall[] } {
  const calls: TalosctlCall[] = [];
  const ok = (stdout: string, stderr = ""): CommandResult => ({
    code: 0,
    stdout,
    stderr,
    timedOut: false,
  });
  const failed = (stderr: string, stdout = ""): CommandResult => ({
    code: 1,
    stdout,
    stderr,
    timedOut: false,
  });

  async function answer(args: readonly string[]): Promise<CommandResult> {
    const node = flag(args, "--nodes") ?? "";
    const command = commandOf(args);
    switch (command) {
      case "version": {
        if (args.includes("--client")) return ok(`Client:\nTalos ${await fake.clientVersion()}\n`);
        const tag = await fake.nodeVersion(node);
        return ok(
          `Client:\n\tTag:         ${String(fake.client)}\n${CLIENT_BUILD}Server:\n` +
            `\tNODE:        ${node}\n\tTag:         ${tag}\n${CLIENT_BUILD}\tEnabled:     RBAC\n`,
        );
      }
      case "get kubeletspec": {
        const version = await fake.kubeletVersion(node);
        const image = fake.node(node).kubeletImage ?? `ghcr.io/siderolabs/kubelet:v${version}`;
        return ok(
          [
            `node: ${node}`,
            "metadata:",
            "    namespace: k8s",
            "    type: KubeletSpecs.kubernetes.talos.dev",
            "    id: kubelet",
            "    version: 3",
            "    owner: k8s.KubeletSpecController",
            "    phase: running",
            "spec:",
            `    image: ${image}`,
            "    args:",
            "        - --cert-dir=/var/lib/kubelet/pki",
            "    expectedNodename: " + fake.node(node).name,
            "",
          ].join("\n"),
        );
      }
      case "get machineconfig v1alpha1": {
        const config = await fake.machineConfig(node);
        const body = config
          .trimEnd()
          .split("\n")
          .map((line) => `    ${line}`)
          .join("\n");
        return ok(
          `node: ${node}\nmetadata:\n    namespace: config\n    type: MachineConfigs.config.talos.dev\n    id: v1alpha1\n    version: 1\nspec: |\n${body}\n`,
        );
      }
      case "etcd members": {
        const members = await fake.etcdMembers(node);
        return ok(
          tabwrite([
            ["NODE", "ID", "HOSTNAME", "PEER URLS", "CLIENT URLS", "LEARNER"],
            ...members.map((m) => [
              node,
              m.id,
              m.hostname,
              m.peerUrls.join(","),
              m.peerUrls.map((url) => url.replace(/:2380$/, ":2379")).join(","),
              String(m.learner),
            ]),
          ]),
        );
      }
      case "service etcd": {
        const status = await fake.service(node, "etcd");
        return ok(
          tabwrite([
            ["NODE", node],
            ["ID", "etcd"],
            ["STATE", status.state],
            ["HEALTH", status.health],
            ["EVENTS", `[${status.state}]: Health check successful (1m0s ago)`],
          ]),
        );
      }
      case "health": {
        const timeoutMs = seconds(flag(args, "--wait-timeout"));
        const split = (value: string | undefined) => (value ? value.split(",") : []);
        const problem = fake.healthProblem();
        try {
          await fake.health({
            via: node,
            controlPlanes: split(flag(args, "--control-plane-nodes")),
            workers: split(flag(args, "--worker-nodes")),
            timeoutMs,
          });
        } catch {
          // rendered below from the problem
        }
        const lines = [`discovered nodes: ${JSON.stringify(fake.nodes.map((n) => n.address))}`];
        for (const check of HEALTH_CHECKS) {
          lines.push(`waiting for ${check}: ...`);
          if (problem?.check === check) {
            // talosctl retries the failing check until --wait-timeout, printing its error.
            lines.push(`waiting for ${check}: ${problem.reason}`);
            fake.clock.time += timeoutMs;
            lines.push("rpc error: code = DeadlineExceeded desc = context deadline exceeded");
            return failed(`${lines.join("\n")}\n`);
          }
          lines.push(`waiting for ${check}: OK`);
        }
        return ok("", `${lines.join("\n")}\n`);
      }
      case "etcd snapshot":
        await fake.etcdSnapshot(node, args[2]);
        return ok(
          `etcd snapshot saved to "${args[2]}" (1056 bytes)\nsnapshot info: hash 8a1b2c3d\n`,
        );
      case "upgrade":
        await fake.upgrade(node, flag(args, "--image") ?? "", seconds(flag(args, "--timeout")));
        return ok(`watching nodes: [${node}]\n    * ${node}: post check passed\n`);
      case "upgrade-k8s":
        return ok(
          await fake.upgradeKubernetes(
            node,
            flag(args, "--to") ?? "",
            args.includes("--dry-run"),
            0,
          ),
        );
      case "etcd leave":
        await fake.etcdLeave(node);
        return ok("");
      case "etcd remove-member":
        await fake.etcdRemoveMember(node, args[2]);
        return ok("");
      case "reset":
        await fake.wipeEphemeral(node);
        return ok("");
      case "bootstrap": {
        const from = args.find((arg) => arg.startsWith("--recover-from="))?.split("=")[1] ?? "";
        await fake.bootstrapRecover(node, from, args.includes("--recover-skip-hash-check"));
        return ok("");
      }
      default:
        return failed(`fake talosctl: unknown command ${JSON.stringify(command)}\n`);
    }
  }

  const run: CommandRunner = async (_command, args, options) => {
    calls.push({ args, timeoutMs: options.timeoutMs });
    let result: CommandResult;
    try {
      result = await answer(args);
    } catch (error) {
      // talosctl prints the error and exits 1.
      result = failed(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    if (result.stderr) options.onOutput?.(result.stderr);
    return result;
  };
  return { run, calls };
}
