// A talosctl that answers from the fake cluster with what the real talosctl printed, so a test can
// run the real TalosctlClient (its argument lists and every parser) through the command line. Every
// answer is a recording of talosctl v1.13.0 against the Talos emulator (test/fixtures/talosctl/,
// recorded by test/emulator/record-talosctl.smoke.ts from a cluster shaped like this fixture) with
// the fake cluster's values put where the recording holds the recorded cluster's: node addresses and
// names, versions, images, configs, etcd members, service state, snapshot paths, the failing health
// check. Table cells keep the recorded widths (the parsers read columns at their header's position);
// member rows are recorded rows, dropped or repeated. A failure of the fake cluster is the
// recording of that call failing: on a node that is down, or with the emulator's fault in place.
import * as fs from "node:fs";
import { KUBERNETES_COMPONENTS } from "../../automation/dayTwo/talosClient";
import type { CommandResult, CommandRunner } from "../../automation/dayTwo/toolRunner";
import { type Recording, hasRecording, recording } from "../emulator/talosctlRecordings";
import type { FakeTalos } from "./fakeTalos";

/** One talosctl run as the client made it. */
export interface TalosctlCall {
  readonly args: readonly string[];
  readonly timeoutMs: number;
}

/** The value after a flag (`--nodes 192.0.2.11`), if present. */
function flag(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args[at + 1];
}

/** The recording of a command: its subcommand words (`etcd-members`, `get-machineconfig-v1alpha1`). */
function recordingOf(args: readonly string[]): string {
  const [first, second, third] = args;
  if (first === "etcd" || first === "service") return `${first}-${second}`;
  if (first === "get") {
    // `get machineconfig` without an ID lists every MachineConfig of the node.
    return second === "machineconfig" && !third.startsWith("--")
      ? `get-${second}-${third}`
      : `get-${second}`;
  }
  if (first === "bootstrap") return "bootstrap-recover";
  return first;
}

/** Seconds of a Go duration as the client writes it (`600s`). */
function seconds(value: string | undefined): number {
  const match = /^(\d+)s$/.exec(value ?? "");
  if (!match) throw new Error(`fake talosctl: unexpected duration ${JSON.stringify(value)}`);
  return Number(match[1]) * 1000;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Puts each new value where the recording has the recorded one, all at once (a value put in is
 * never replaced again), and only whole values: 192.0.2.2 is not a part of 192.0.2.21, w-1 not of w-12.
 */
function substitute(text: string, pairs: readonly (readonly [string, string])[]): string {
  const values = new Map(pairs.filter(([from]) => from !== ""));
  if (values.size === 0) return text;
  const alternatives = [...values.keys()].sort((a, b) => b.length - a.length).map(escape);
  const pattern = new RegExp(`(?<![\\w.-])(?:${alternatives.join("|")})(?![\\w-]|\\.\\d)`, "g");
  return text.replace(pattern, (value) => values.get(value)!);
}

/** Puts `value` where the first group of `pattern` matched, after `after` when given. */
function put(text: string, pattern: RegExp, value: string, after = ""): string {
  const from = text.indexOf(after);
  const match = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}d`).exec(
    text.slice(from),
  );
  if (from < 0 || !match?.indices?.[1]) {
    throw new Error(
      `fake talosctl: the recording has no ${pattern} after ${JSON.stringify(after)}`,
    );
  }
  const [start, end] = match.indices[1];
  return text.slice(0, from + start) + value + text.slice(from + end);
}

type Edit = (text: string) => string;
const unchanged: Edit = (text) => text;

/** The recording's output and exit code: `edit` applied to both outputs, then `stdout` to stdout. */
function answer(rec: Recording, edit: Edit = unchanged, stdout: Edit = unchanged): CommandResult {
  return {
    code: rec.exitCode,
    stdout: stdout(edit(rec.stdout)),
    stderr: edit(rec.stderr),
    timedOut: false,
  };
}

/** The lines of a YAML block scalar (`spec: |`) replaced by `body`, indented as the recording's. */
function replaceBlock(text: string, key: string, body: string): string {
  const lines = text.split("\n");
  const at = lines.findIndex((line) => line === `${key}: |`);
  if (at < 0) throw new Error(`fake talosctl: the recording has no ${key} block`);
  let end = at + 1;
  while (end < lines.length && (lines[end] === "" || /^\s/.test(lines[end]))) end++;
  const indent = /^\s*/.exec(lines[at + 1] ?? "")![0];
  const indented = body
    .trimEnd()
    .split("\n")
    .map((line) => (line === "" ? line : indent + line));
  const rest = lines.slice(end);
  return [...lines.slice(0, at + 1), ...indented, ...(rest.length > 0 ? rest : [""])].join("\n");
}

/** A recorded MachineConfig resource (metadata, then `spec: |`) holding `config` as its spec. */
function withSpec(resource: string, config: string): string {
  const at = resource.indexOf("\nspec: |");
  return resource.slice(0, at) + replaceBlock(resource.slice(at), "spec", config);
}

/** A table's columns: each header's name and where its cells start (the parsers read them so). */
function columns(header: string): { name: string; start: number; end?: number }[] {
  const found = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], start: m.index }));
  return found.map((column, i) => ({ ...column, end: found[i + 1]?.start }));
}

/**
 * The row with `value` in the column `name`, as wide as the recorded column: a value wider than
 * every recorded one would move the next column, so it is refused.
 */
function setCell(row: string, table: readonly string[], name: string, value: string): string {
  const column = columns(table[0]).find((c) => c.name === name);
  if (!column) throw new Error(`fake talosctl: the recorded table has no column ${name}`);
  if (column.end === undefined) return row.slice(0, column.start) + value;
  const widest = Math.max(
    ...table.slice(1).map((r) => r.slice(column.start, column.end).trim().length),
  );
  if (value.length > widest) {
    throw new Error(
      `fake talosctl: ${JSON.stringify(value)} is wider than the recorded ${name} column (${widest}); give the fixture values of the recording's widths`,
    );
  }
  return (
    row.slice(0, column.start) + value.padEnd(column.end - column.start) + row.slice(column.end)
  );
}

/**
 * The call's argument values in place of the recorded call's: positional arguments (a snapshot's
 * path, a member id), flag values (`--image`, `--recover-from=`), and an image's tag (what
 * `upgrade` says it installed).
 */
function argumentPairs(recorded: readonly string[], args: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  const isFlag = (arg: string | undefined) => arg?.startsWith("--") ?? false;
  for (let i = 0; i < recorded.length && !isFlag(recorded[i]); i++) {
    if (i < args.length && !isFlag(args[i])) pairs.push([recorded[i], args[i]]);
  }
  recorded.forEach((arg, i) => {
    const joined = /^(--[\w-]+)=(.*)$/.exec(arg);
    if (joined) {
      const mine = args.find((a) => a.startsWith(`${joined[1]}=`));
      if (mine !== undefined) pairs.push([joined[2], mine.slice(joined[1].length + 1)]);
    } else if (isFlag(arg) && i + 1 < recorded.length && !isFlag(recorded[i + 1])) {
      const mine = flag(args, arg);
      if (mine !== undefined && !isFlag(mine)) pairs.push([recorded[i + 1], mine]);
    }
  });
  const image = /^[^\s:]+\/[^\s]+:([^:/\s]+)$/;
  for (const [from, to] of [...pairs]) {
    const [fromTag, toTag] = [image.exec(from)?.[1], image.exec(to)?.[1]];
    if (fromTag && toTag) pairs.push([fromTag, toTag]);
  }
  return pairs.filter(([from, to]) => from !== to);
}

/** The host of an etcd URL (`https://192.0.2.11:2380`). */
const hostOf = (url: string) => new URL(url).hostname;

/** A talosctl runner over a fake cluster; `calls` records every run. */
export function fakeTalosctl(fake: FakeTalos): { run: CommandRunner; calls: TalosctlCall[] } {
  const calls: TalosctlCall[] = [];

  /** Recording `name`, edited to show the fake node and the call's arguments in their place. */
  function onNode(name: string, args: readonly string[]): { rec: Recording; edit: Edit } {
    const rec = recording(name);
    const address = flag(args, "--nodes");
    const pairs = argumentPairs(rec.args, args);
    if (rec.node && address !== undefined) {
      pairs.push([rec.node.address, address], [rec.node.name, fake.node(address).name]);
    }
    return { rec, edit: (text) => substitute(text, pairs) };
  }

  /** `talosctl version` prints its own version under `Client:` first. */
  const clientTag: Edit = (out) =>
    out.startsWith("Client:") && !(fake.client instanceof Error)
      ? put(out, /Tag:\s+(\S+)/, fake.client)
      : out;

  /** Recording `name` with the call's node and arguments. */
  function replay(name: string, args: readonly string[]): CommandResult {
    const { rec, edit } = onNode(name, args);
    return answer(rec, edit);
  }

  /** What talosctl printed when the call failed: the node down, or the fault the emulator injects. */
  function failure(args: readonly string[], error: unknown): CommandResult {
    const name = recordingOf(args);
    const message = error instanceof Error ? error.message : String(error);
    if (!hasRecording(`${name}-unreachable`)) {
      throw new Error(`fake talosctl: no recording of ${name} failing (${message})`);
    }
    // The fake's node is down: talosctl's own error says so.
    if (/code = Unavailable/.test(message)) {
      const { rec, edit } = onNode(`${name}-unreachable`, args);
      return answer(rec, edit, clientTag);
    }
    // Another failure of the fake cluster: the recorded failure, with the fake's error as its cause.
    const faulted = hasRecording(`${name}-failed`);
    const { rec, edit } = onNode(`${name}-${faulted ? "failed" : "unreachable"}`, args);
    const cause = faulted
      ? /emulated fault: [^\n"]*/
      : /rpc error: code = Unavailable desc = connection error: desc = "[^"\n]*"/;
    return answer(rec, (text) => edit(text).replace(cause, () => message), clientTag);
  }

  /** The `discovered nodes` line listing the nodes health was given, as the recording lists them. */
  function discovered(text: string, given: readonly string[]): string {
    const line = /^discovered nodes: .*$/m.exec(text)?.[0];
    if (line === undefined) return text;
    const items = [...line.matchAll(/"[^"]*"/g)];
    if (items.length < 2) throw new Error("fake talosctl: too few discovered nodes recorded");
    const [first, second] = items;
    const last = items[items.length - 1];
    const separator = line.slice(first.index + first[0].length, second.index);
    const list = given.map((address) => substitute(first[0], [[first[0].slice(1, -1), address]]));
    const shown =
      line.slice(0, first.index) + list.join(separator) + line.slice(last.index + last[0].length);
    return text.replace(line, () => shown);
  }

  /**
   * talosctl health: the recorded checks in their order; when the fake cluster has a problem, they
   * stop at its check with the recorded failure's layout: its error, then the gRPC deadline.
   */
  function health(args: readonly string[], passed: boolean): CommandResult {
    const given = [
      ...(flag(args, "--control-plane-nodes")?.split(",") ?? []),
      ...(flag(args, "--worker-nodes")?.split(",") ?? []),
    ];
    const { rec: passing, edit } = onNode("health", args);
    if (passed) return answer(passing, (text) => discovered(edit(text), given));
    const problem = fake.healthProblem();
    if (!problem) throw new Error("fake talosctl: health failed without a problem to show");
    // talosctl retries the failing check until --wait-timeout.
    fake.clock.time += seconds(flag(args, "--wait-timeout"));
    const failed = recording("health-failed");
    const recorded = /^(waiting for )(.+?)(: )(?!\.\.\.$|OK$)(.*)$/m.exec(failed.stderr);
    if (!recorded) throw new Error("fake talosctl: health-failed has no failing check");
    const [line, prefix, , separator] = recorded;
    const checks = passing.stderr.split("\n");
    const upTo = checks.findIndex((l) => l.startsWith(`${prefix}${problem.check}${separator}`));
    if (upTo < 0) throw new Error(`fake talosctl: talosctl ran no check "${problem.check}"`);
    const after = failed.stderr.slice(recorded.index + line.length);
    const stderr = [
      ...checks.slice(0, upTo + 1),
      `${prefix}${problem.check}${separator}${problem.reason}${after}`,
    ].join("\n");
    return { ...answer(failed), stderr: discovered(edit(stderr), given) };
  }

  async function respond(args: readonly string[]): Promise<CommandResult> {
    const node = flag(args, "--nodes") ?? "";
    const name = recordingOf(args);
    switch (name) {
      case "version": {
        if (args.includes("--client")) {
          const client = await fake.clientVersion().catch((error: unknown) => {
            // `talosctl version --client` fails only when there is no talosctl to run.
            throw Object.assign(new Error(`spawn talosctl ENOENT (${String(error)})`), {
              code: "ENOENT",
            });
          });
          return answer(recording("version-client"), unchanged, (out) =>
            put(out, /Talos (\S+)/, client),
          );
        }
        const tag = await fake.nodeVersion(node);
        const { rec, edit } = onNode(name, args);
        return answer(rec, edit, (out) => put(clientTag(out), /Tag:\s+(\S+)/, tag, "Server:"));
      }
      case "get-kubeletspec": {
        const version = await fake.kubeletVersion(node);
        const { rec, edit } = onNode(name, args);
        const recordedImage = /^\s*image:\s*(\S+)/m.exec(rec.stdout)![1];
        const image =
          fake.node(node).kubeletImage ?? recordedImage.replace(/:[^:/]+$/, `:v${version}`);
        return answer(rec, edit, (out) => put(out, /^\s*image:\s*(\S+)/m, image));
      }
      case "get-extensions": {
        const schematic = await fake.schematic(node);
        const { rec, edit } = onNode(name, args);
        // No schematic: an image not from the Image Factory lists no such extension.
        if (schematic === undefined) return answer({ ...rec, stdout: "" });
        return answer(rec, edit, (out) => put(out, /version:\s*([0-9a-f]{64})/, schematic));
      }
      case "get-machineconfig-v1alpha1": {
        const config = await fake.machineConfig(node);
        const { rec, edit } = onNode(name, args);
        // Only the metadata is edited: the spec is the fake node's config.
        return answer(rec, unchanged, (out) => withSpec(edit(out), config));
      }
      case "get-machineconfig": {
        const configs = await fake.machineConfigs(node);
        const { rec, edit } = onNode(name, args);
        // The recorded list holds both resources (the emulator keeps a persistent one); the fake's
        // node has persistent only when a config was applied since its boot, as a Talos node has.
        const list = edit(rec.stdout)
          .split(/^---\n/m)
          .flatMap((resource) => {
            const id = /^ {4}id: (\S+)$/m.exec(resource)?.[1];
            if (id === "persistent") {
              return configs.persistent === undefined
                ? []
                : [withSpec(resource, configs.persistent)];
            }
            const version = put(resource, /^ {4}version: (\d+)$/m, String(configs.runningVersion));
            return [withSpec(version, configs.running)];
          });
        return {
          code: rec.exitCode,
          stdout: list.join("---\n"),
          stderr: edit(rec.stderr),
          timedOut: false,
        };
      }
      case "etcd-members": {
        const members = await fake.etcdMembers(node);
        const rec = recording(name);
        const table = rec.stdout.split("\n").filter((line) => line.trim() !== "");
        const header = columns(table[0]);
        const rows = members.map((member, i) => {
          const recorded = table[Math.min(i + 1, table.length - 1)];
          const cell = (column: string) => {
            const c = header.find((x) => x.name === column)!;
            return recorded.slice(c.start, c.end).trim();
          };
          // The client URLs are the recorded member's, on the fake member's address.
          const peer = member.peerUrls[0];
          const clientUrls = peer
            ? substitute(cell("CLIENT URLS"), [[hostOf(cell("PEER URLS")), hostOf(peer)]])
            : "";
          const cells: [string, string][] = [
            ["NODE", node],
            ["ID", member.id],
            ["HOSTNAME", member.hostname],
            ["PEER URLS", member.peerUrls.join(",")],
            ["CLIENT URLS", clientUrls],
            ["LEARNER", String(member.learner)],
          ];
          return cells.reduce(
            (row, [column, value]) => setCell(row, table, column, value),
            recorded,
          );
        });
        return answer(rec, unchanged, () => [table[0], ...rows, ""].join("\n"));
      }
      case "service-etcd": {
        const status = await fake.service(node, "etcd");
        const { rec, edit } = onNode(
          status.state === "Preparing" ? `${name}-preparing` : name,
          args,
        );
        return answer(rec, edit, (out) =>
          put(put(out, /STATE\s+(\S+)/, status.state), /HEALTH\s+(\S+)/, status.health),
        );
      }
      case "health": {
        const passed = await fake
          .health({
            via: node,
            controlPlanes: flag(args, "--control-plane-nodes")?.split(",") ?? [],
            workers: flag(args, "--worker-nodes")?.split(",") ?? [],
            timeoutMs: seconds(flag(args, "--wait-timeout")),
          })
          .then(
            () => true,
            () => false,
          );
        // talosctl asks the node it is given to run the checks: one that is down answers nothing.
        if (!fake.node(node).up) return replay(`${name}-unreachable`, args);
        return health(args, passed);
      }
      case "etcd-snapshot": {
        await fake.etcdSnapshot(node, args[2]);
        const { rec, edit } = onNode(name, args);
        const size = String(fs.statSync(args[2]).size);
        return answer(rec, edit, (out) => put(out, /\((\d+) bytes\)/, size));
      }
      case "upgrade": {
        await fake.upgrade(node, flag(args, "--image") ?? "", seconds(flag(args, "--timeout")));
        return replay(name, args);
      }
      case "upgrade-k8s": {
        // Not recorded: the emulator serves none of what upgrade-k8s drives (docs/development.md),
        // so its output is the fake cluster's, its dry run hand-written from Talos' source
        // (test/fixtures/upgrade-k8s/README.md).
        const images = Object.fromEntries(
          KUBERNETES_COMPONENTS.flatMap((component) => {
            const image = flag(args, `--${component}-image`);
            return image === undefined ? [] : [[component, image]];
          }),
        );
        const upgrade = {
          to: flag(args, "--to") ?? "",
          dryRun: args.includes("--dry-run"),
          timeoutMs: 0,
          images,
          noPrune: args.includes("--manifests-no-prune"),
        };
        return fake.upgradeKubernetes(node, upgrade).then(
          (stdout) => ({ code: 0, stdout, stderr: "", timedOut: false }),
          (error: Error) => ({
            code: 1,
            stdout: "",
            stderr: `${error.message}\n`,
            timedOut: false,
          }),
        );
      }
      case "reboot":
        await fake.reboot(node, seconds(flag(args, "--timeout")));
        return replay(name, args);
      case "reset": {
        const labels = args.find((arg) => arg.startsWith("--system-labels-to-wipe="))!;
        await fake.wipeVolumes(node, labels.split("=")[1].split(","));
        return replay(name, args);
      }
      case "etcd-forfeit-leadership":
        await fake.etcdForfeitLeadership(node);
        return replay(name, args);
      case "etcd-leave":
        await fake.etcdLeave(node);
        return replay(name, args);
      case "etcd-remove-member":
        await fake.etcdRemoveMember(node, args[2]);
        return replay(name, args);
      case "bootstrap-recover": {
        const from = args.find((arg) => arg.startsWith("--recover-from="))!.split("=")[1];
        await fake.bootstrapRecover(node, from, args.includes("--recover-skip-hash-check"));
        return replay(name, args);
      }
      default:
        throw new Error(`fake talosctl: no recording answers ${JSON.stringify(args.join(" "))}`);
    }
  }

  const run: CommandRunner = async (_command, args, options) => {
    calls.push({ args, timeoutMs: options.timeoutMs });
    let result: CommandResult;
    try {
      result = await respond(args);
    } catch (error) {
      // A missing talosctl, or a test asking for what no recording shows, is not talosctl's answer.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw error;
      if (error instanceof Error && error.message.startsWith("fake talosctl:")) throw error;
      result = failure(args, error);
    }
    if (result.stdout) options.onOutput?.(result.stdout);
    if (result.stderr) options.onOutput?.(result.stderr);
    return result;
  };
  return { run, calls };
}
