// Reading talosctl's output. talosctl prints tables and YAML for people, and the layout has changed
// between releases (columns added, the short version format, a hidden --json), so every parser finds
// what it needs by name (a header, a key, a `Tag:` line) rather than by position, and says what it
// could not find instead of guessing.
import { parseAllDocuments, stringify } from "yaml";
import { parseVersion } from "../../components/talos/versions";
import type { EtcdMember, NodeConfigs, ServiceStatus } from "./talosClient";

/** talosctl printed something this CLI cannot read. */
class TalosctlOutputError extends Error {
  constructor(
    readonly command: string,
    readonly expected: string,
    readonly output: string,
  ) {
    super(`talosctl ${command}: expected ${expected}; got ${JSON.stringify(firstLine(output))}`);
    this.name = "TalosctlOutputError";
  }
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}

const TAG = /\bv?(\d+\.\d+\.\d+)(-[0-9A-Za-z.-]+)?\b/;

/** `v1.13.9` from a tag-like string (`v1.13.9`, `1.13.9`, `v1.14.0-alpha.1`); undefined otherwise. */
export function normalizeTag(value: string): string | undefined {
  const match = TAG.exec(value.trim());
  return match ? `v${match[1]}${match[2] ?? ""}` : undefined;
}

/**
 * The client version from `talosctl version --client --short`: `Client:` then `Talos v1.13.9`
 * (older releases print the long `Tag:  v1.13.9` form even with --short).
 */
export function parseClientVersion(output: string): string {
  const client = section(output, "Client:", "Server:") ?? output;
  const tagLine = /^\s*Tag:\s*(\S+)/m.exec(client);
  const tag = normalizeTag(tagLine ? tagLine[1] : client);
  if (!tag) throw new TalosctlOutputError("version --client", "a version like v1.13.9", output);
  return tag;
}

/**
 * The version a node runs, from `talosctl version --nodes X`: the `Tag:` under `Server:`; or, from
 * the hidden `--json` form, `version.tag` of the first JSON line.
 */
export function parseServerVersion(output: string): string {
  for (const line of output.split("\n")) {
    if (!line.trim().startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { version?: { tag?: unknown } };
      const tag = typeof parsed.version?.tag === "string" ? normalizeTag(parsed.version.tag) : "";
      if (tag) return tag;
    } catch {
      // not JSON after all: fall through to the text form
    }
  }
  const server = section(output, "Server:");
  const tagLine = server ? /^\s*Tag:\s*(\S+)/m.exec(server) : null;
  const tag = tagLine ? normalizeTag(tagLine[1]) : undefined;
  if (!tag) throw new TalosctlOutputError("version", "a `Tag:` line under `Server:`", output);
  return tag;
}

/** The text after `start` (and before `end`, when given), or undefined without `start`. */
function section(text: string, start: string, end?: string): string | undefined {
  const from = text.indexOf(start);
  if (from < 0) return undefined;
  const rest = text.slice(from + start.length);
  const to = end ? rest.indexOf(end) : -1;
  return to < 0 ? rest : rest.slice(0, to);
}

/**
 * Splits a table talosctl printed with Go's tabwriter: cells start where their header starts.
 * Header names may contain single spaces (`PEER URLS`); columns are separated by two or more.
 */
function parseTable(output: string, required: readonly string[]): Record<string, string>[] {
  const lines = output.split("\n").filter((line) => line.trim() !== "");
  const headerIndex = lines.findIndex((line) =>
    required.every((name) => new RegExp(`(^|\\s)${name}(\\s|$)`).test(line)),
  );
  if (headerIndex < 0) return [];
  const header = lines[headerIndex];
  const columns: { name: string; start: number }[] = [];
  for (const match of header.matchAll(/\S+(?: \S+)*/g)) {
    columns.push({ name: match[0], start: match.index });
  }
  return lines.slice(headerIndex + 1).map((line) => {
    const row: Record<string, string> = {};
    columns.forEach((column, i) => {
      const end = i + 1 < columns.length ? columns[i + 1].start : undefined;
      row[column.name] = line.slice(column.start, end).trim();
    });
    return row;
  });
}

/** The members from `talosctl etcd members` (with or without the NODE and LEARNER columns). */
export function parseEtcdMembers(output: string): EtcdMember[] {
  const rows = parseTable(output, ["ID", "HOSTNAME"]);
  if (rows.length === 0 && !/\bID\b.*\bHOSTNAME\b/.test(output)) {
    throw new TalosctlOutputError("etcd members", "a table with ID and HOSTNAME columns", output);
  }
  return rows
    .filter((row) => /^[0-9a-fA-F]+$/.test(row.ID ?? ""))
    .map((row) => ({
      id: row.ID,
      hostname: row.HOSTNAME ?? "",
      peerUrls: (row["PEER URLS"] ?? "").split(",").filter((url) => url !== ""),
      learner: (row.LEARNER ?? "false").toLowerCase() === "true",
    }));
}

/** STATE and HEALTH from `talosctl service <id>` (a `KEY   value` listing). */
export function parseServiceStatus(output: string): ServiceStatus {
  const state = /^\s*STATE\s+(\S+)/m.exec(output);
  if (!state) throw new TalosctlOutputError("service", "a `STATE` line", output);
  const health = /^\s*HEALTH\s+(\S+)/m.exec(output);
  return { state: state[1], health: health ? health[1] : "" };
}

/** The resources of `talosctl get … -o yaml` (one YAML document each, `node:` included). */
function resources(command: string, output: string): Record<string, unknown>[] {
  let docs;
  try {
    docs = parseAllDocuments(output);
  } catch {
    throw new TalosctlOutputError(command, "YAML resources", output);
  }
  const list = Array.isArray(docs) ? docs : [docs];
  return list
    .map((doc) => (doc.errors.length === 0 ? (doc.toJS() as unknown) : undefined))
    .filter(
      (value): value is Record<string, unknown> => typeof value === "object" && value !== null,
    );
}

/**
 * The Kubernetes version of the kubelet image in `talosctl get kubeletspec -o yaml`: the tag of
 * `…/kubelet:v1.36.3`, also when the image is pinned by digest (`…/kubelet:v1.36.3@sha256:…`, valid in
 * `machine.kubelet.image`; Talos itself reads the version from the tag before the `@`).
 */
export function parseKubeletVersion(output: string): string {
  for (const resource of resources("get kubeletspec", output)) {
    const spec = resource.spec as { image?: unknown } | undefined;
    if (typeof spec?.image !== "string") continue;
    const tag = imageTag(spec.image);
    const version = tag ? parseVersion(tag) : undefined;
    if (version) return version.version;
  }
  throw new TalosctlOutputError(
    "get kubeletspec",
    "spec.image with a version tag like ghcr.io/siderolabs/kubelet:v1.36.3 (a digest may follow: …:v1.36.3@sha256:…)",
    output,
  );
}

/**
 * The Image Factory schematic a node booted, from `talosctl get extensions -o yaml`: an image the
 * Factory built carries a virtual extension named `schematic` whose version is the schematic ID
 * (siderolabs/talos#13139; siderolabs/extensions#356). Undefined for an image without one (not
 * from the Factory).
 */
export function parseSchematic(output: string): string | undefined {
  if (output.trim() === "") return undefined;
  for (const resource of resources("get extensions", output)) {
    const metadata = (resource.spec as { metadata?: { name?: unknown; version?: unknown } })
      ?.metadata;
    if (metadata?.name === "schematic" && typeof metadata.version === "string") {
      return metadata.version;
    }
  }
  return undefined;
}

/** The schematic ID in an Image Factory image (`factory.talos.dev/<platform>-installer/<id>:<tag>`). */
export function imageSchematic(image: string): string | undefined {
  return /\/([0-9a-f]{64})(?:[:@]|$)/.exec(image)?.[1];
}

/**
 * A MachineConfig resource's spec: the config itself, a string holding every document
 * (multi-document configs) or, in older releases, the v1alpha1 document as a mapping.
 */
function configSpec(resource: Record<string, unknown>): string | undefined {
  const spec = resource.spec;
  if (typeof spec === "string" && spec.trim() !== "") return spec;
  if (typeof spec === "object" && spec !== null) return stringify(spec);
  return undefined;
}

/** Never echo a machine config: it holds the cluster's keys. */
const WITHHELD = "(output withheld: it may hold secrets)";

/** The machine config from `talosctl get machineconfig <id> -o yaml`. */
export function parseMachineConfig(output: string): string {
  for (const resource of resources("get machineconfig", output)) {
    const spec = configSpec(resource);
    if (spec !== undefined) return spec;
  }
  throw new TalosctlOutputError("get machineconfig", "a resource with a spec", WITHHELD);
}

/**
 * Every MachineConfig of a node from `talosctl get machineconfig -o yaml` (no ID: the list, one
 * YAML document per resource after its `node:` line): `v1alpha1` with its `metadata.version`, and
 * `persistent` when the node has one.
 */
export function parseMachineConfigs(output: string): NodeConfigs {
  let running: { spec: string; version: number } | undefined;
  let persistent: string | undefined;
  for (const resource of resources("get machineconfig", output)) {
    const metadata = (resource.metadata ?? {}) as { id?: unknown; version?: unknown };
    const spec = configSpec(resource);
    if (spec === undefined) continue;
    if (metadata.id === "v1alpha1") {
      const version = Number(metadata.version);
      if (!Number.isInteger(version) || version < 1) {
        throw new TalosctlOutputError(
          "get machineconfig",
          "metadata.version of v1alpha1 as a number",
          WITHHELD,
        );
      }
      running = { spec, version };
    } else if (metadata.id === "persistent") persistent = spec;
  }
  if (!running) {
    throw new TalosctlOutputError(
      "get machineconfig",
      "the v1alpha1 resource with a spec",
      WITHHELD,
    );
  }
  return {
    running: running.spec,
    runningVersion: running.version,
    ...(persistent !== undefined ? { persistent } : {}),
  };
}

/** The boot ID from `talosctl get bootid -o yaml` (Talos 1.14's BootIDSpec: `spec.bootID`). */
export function parseBootId(output: string): string {
  for (const resource of resources("get bootid", output)) {
    const id = (resource.spec as { bootID?: unknown } | undefined)?.bootID;
    if (typeof id === "string" && id !== "") return id;
  }
  throw new TalosctlOutputError("get bootid", "a resource with spec.bootID", output);
}

/**
 * The `type` of a volume from `talosctl get volumestatus <id> -o yaml` (`partition`, `directory`, …:
 * Talos' VolumeType names, `VolumeStatusSpec.type`).
 */
export function parseVolumeType(output: string): string {
  for (const resource of resources("get volumestatus", output)) {
    const type = (resource.spec as { type?: unknown } | undefined)?.type;
    if (typeof type === "string" && type !== "") return type;
  }
  throw new TalosctlOutputError("get volumestatus", "a resource with spec.type", output);
}

/** An image reference split into its parts: `repo/name`, the tag and the digest (each optional). */
export function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const at = image.indexOf("@");
  const digest = at < 0 ? undefined : image.slice(at + 1);
  const withoutDigest = at < 0 ? image : image.slice(0, at);
  // A colon after the last slash starts the tag; one before it belongs to a registry port.
  const colon = withoutDigest.lastIndexOf(":");
  const hasTag = colon > withoutDigest.lastIndexOf("/");
  return {
    name: hasTag ? withoutDigest.slice(0, colon) : withoutDigest,
    ...(hasTag ? { tag: withoutDigest.slice(colon + 1) } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/**
 * The tag of an image reference (`repo/name:tag`, also `repo/name:tag@sha256:…`); undefined when it
 * has none (`repo/name`, `repo/name@sha256:…`).
 */
export function imageTag(image: string): string | undefined {
  const { tag } = splitImage(image);
  return tag === "" ? undefined : tag;
}

/**
 * The same image with another tag: `…/nocloud-installer/<schematic>:v1.13.9` → `…:v1.14.1`. A digest
 * is dropped: it pins the old image, which the new tag is not. Undefined without a tag to replace.
 */
export function retagImage(image: string, tag: string): string | undefined {
  const parts = splitImage(image);
  if (parts.tag === undefined || parts.tag === "") return undefined;
  return `${parts.name}:${tag}`;
}

/** The check `talosctl health` reported failing last, and what it said. */
interface HealthFailure {
  /** The check as talosctl names it, e.g. `all k8s nodes to report ready`. */
  readonly check: string;
  /** Its last error, e.g. `some nodes are not ready: [w-1]`. */
  readonly reason: string;
}

/** Statuses of a check that are not a failure: running, passed, skipped. */
const NOT_FAILED = new Set(["...", "OK", "SKIP"]);

/** The status of a check whose wait ran out while it was under way. */
const DEADLINE = /code = DeadlineExceeded|context deadline exceeded/;

/**
 * The failing check in `talosctl health` output. talosctl (v1.13, server side, the default) prints
 * each check's progress as `waiting for <check>: <status>`, the status being `...` while it runs,
 * `OK` when it passed, `SKIP`, or the check's last error while it retries; when the wait times out,
 * its final line is only the gRPC error (`context deadline exceeded`). The last line with an error
 * status names what failed; undefined when there is none (talosctl failed before any check ran).
 * An error of several nodes goes on over indented lines (`1 error occurred:` then
 * `\t* 192.0.2.23: rpc error: …`), which belong to the reason; and when the wait runs out while the
 * check is under way, its status becomes the deadline, which does not replace the error before it.
 */
export function parseHealthFailure(output: string): HealthFailure | undefined {
  let failure: HealthFailure | undefined;
  let continues = false;
  for (const line of output.split("\n")) {
    const match = /^\s*waiting for (.+?): (.*\S)\s*$/.exec(line);
    if (!match) {
      continues = continues && /^\s+\S/.test(line);
      if (continues && failure) {
        failure = { ...failure, reason: `${failure.reason} ${line.trim().replace(/^\* /, "")}` };
      }
      continue;
    }
    const [, check, status] = match;
    continues = false;
    if (NOT_FAILED.has(status)) {
      if (failure?.check === check) failure = undefined;
      continue;
    }
    if (failure?.check === check && DEADLINE.test(status)) continue;
    failure = { check, reason: status };
    continues = true;
  }
  return failure;
}

/** What `talosctl upgrade-k8s` would do to one object of the bootstrap manifests. */
export interface ManifestChange {
  /**
   * `created`: not in the cluster; `configured`: the live object differs from the config's and
   * would be overwritten; `unchanged`; `pruned`: applied before, no longer in the config, deleted.
   */
  readonly action: "created" | "configured" | "unchanged" | "pruned";
  /**
   * `Deployment/kube-system/cilium-operator` (server-side apply, Talos 1.13 and later), or
   * `apps/v1.Deployment/kube-system/cilium-operator` (the sync of older releases).
   */
  readonly subject: string;
  /** The object's kind (`Deployment`). */
  readonly kind: string;
  /** talosctl's unified diff of it; may hold a Secret's data: never print a Secret's. */
  readonly diff: string;
}

/** The line upgrade-k8s starts its manifest sync with (`(dry run)` only with server-side apply). */
export const MANIFEST_STEP = /^updating manifests( \(dry run\))?$/;

/** The kind in a subject: `Kind/ns/name`, or the older `group/version.Kind/ns/name`. */
function subjectKind(subject: string): string {
  const older = /^(?:[^/]+\/)?[^/.]+\.([^/]+)\//.exec(subject);
  return older ? older[1] : (subject.split("/")[0] ?? "");
}

/** A diff that only adds lines: the object does not exist yet. */
function onlyAdds(diff: readonly string[]): boolean {
  return diff.every((line) => !/^[- ]/.test(line) || /^(---|\+\+\+) /.test(line));
}

/**
 * The manifest sync of `talosctl upgrade-k8s --dry-run`, the upgrade's last step, one entry per
 * object. talosctl 1.13 and later, on Talos 1.13 and later nodes, diff with server-side apply
 * (pkg/cluster/kubernetes/talos_managed.go, syncManifestsSSA; go-kubernetes v0.2.36 ssa.Diff):
 * `updating manifests (dry run)`, then for each object ` < <action> <Kind>/<ns>/<name>` (`created`,
 * `configured`, `unchanged` or `Pruned`, prunes first) and its diff. Older ones, or older nodes
 * (go-kubernetes manifests.SyncWithLog): `updating manifests`, then for each object
 * ` > processing manifest <group/version>.<Kind>/<ns>/<name>` and either ` < no changes` or its diff
 * and ` < dry run, change skipped` (it never prunes). Undefined when there is no manifest step.
 */
export function parseManifestDryRun(output: string): ManifestChange[] | undefined {
  const lines = output.split("\n");
  let header = -1;
  lines.forEach((line, i) => {
    if (MANIFEST_STEP.test(line)) header = i;
  });
  if (header < 0) return undefined;
  const changes: ManifestChange[] = [];
  const add = (action: ManifestChange["action"], subject: string, diff: string[]) =>
    changes.push({ action, subject, kind: subjectKind(subject), diff: diff.join("\n").trim() });
  const unexpected = (line: string): never => {
    throw new TalosctlOutputError(
      "upgrade-k8s --dry-run",
      "` < <action> <object>` (or ` > processing manifest <object>`) lines after `updating manifests`",
      line,
    );
  };
  let open: { subject: string; diff: string[]; action?: ManifestChange["action"] } | undefined;
  const close = () => {
    if (open?.action) add(open.action, open.subject, open.diff);
    open = undefined;
  };
  for (const line of lines.slice(header + 1)) {
    const ssa = /^ < (created|configured|unchanged|Pruned) (\S+)$/.exec(line);
    const older = /^ > processing manifest (\S+)$/.exec(line);
    if (ssa) {
      close();
      open = {
        subject: ssa[2],
        diff: [],
        action: ssa[1] === "Pruned" ? "pruned" : (ssa[1] as ManifestChange["action"]),
      };
    } else if (older) {
      close();
      open = { subject: older[1], diff: [] };
    } else if (open && !open.action && line === " < no changes") {
      open.action = "unchanged";
      close();
    } else if (open && !open.action && line === " < dry run, change skipped") {
      open.action = onlyAdds(open.diff) ? "created" : "configured";
      close();
    } else if (open) {
      open.diff.push(line);
    } else if (line.trim() !== "") {
      unexpected(line);
    }
  }
  // An older sync's object without its closing line: talosctl stopped before it finished.
  if (open && !open.action) unexpected(` > processing manifest ${open.subject}`);
  close();
  return changes;
}

/** A line naming a manifest object in upgrade-k8s's output (dry run or apply, either sync). */
const OBJECT_LINE =
  /^ (?:< (?:created|configured|unchanged|deleted|Pruned)|> processing manifest|> skipped) (\S+?)(?::.*)?$/;

/** A line of a unified diff (or the blank line talosctl prints after one). */
const DIFF_LINE = /^(?:$|--- |\+\+\+ |@@|[ +\-\\])/;

/**
 * `sink` with the diffs of Secrets taken out of upgrade-k8s's streamed output. While it applies the
 * bootstrap manifests, upgrade-k8s prints every object it changes with a diff of the whole object
 * (go-kubernetes ssa/cli LogApplyResults, manifests.SyncWithLog): a Secret it creates shows its
 * values, and the older sync masks none. Each such diff becomes one line saying it is withheld;
 * everything else passes through, line by line.
 */
export function withoutSecretDiffs(sink: (text: string) => void): (text: string) => void {
  let partial = "";
  let hiding = false;
  return (text) => {
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    const shown: string[] = [];
    for (const line of lines) {
      const object = OBJECT_LINE.exec(line);
      if (object) {
        hiding = subjectKind(object[1]) === "Secret";
        shown.push(line);
        if (hiding) shown.push(" (a Secret: its diff is not shown)");
      } else if (!(hiding && DIFF_LINE.test(line) && !/^ [<>] /.test(line))) {
        hiding = false;
        shown.push(line);
      }
    }
    if (shown.length > 0) sink(`${shown.join("\n")}\n`);
  };
}
