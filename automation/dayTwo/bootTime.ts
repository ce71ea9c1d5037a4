// The machine-config fields that take effect only when a node boots. Talos 1.14 applies every config
// change to the running node (apply mode `auto` is no-reboot; 1.14's ApplyConfiguration no longer
// asks whether a change can be applied at once), and documents the changes that a running node
// does not fully pick up ("Changes which might need a reboot", docs.siderolabs.com, Edit Machine
// Configuration, since Talos 1.14):
//   - `.cluster.etcd`: etcd reads its settings when it starts, and Talos does not restart it;
//   - the environment (`EnvironmentConfig`, `.machine.env`): a running service keeps the environment
//     it started with, and a removed variable stays set;
//   - kernel modules (`KernelModuleConfig`, `.machine.kernel.modules`): added ones are loaded, but a
//     module is never unloaded and its parameters apply only when it is first loaded;
//   - volume encryption (the `encryption` of a volume document): applied when the volume is
//     unlocked, at boot;
//   - `SecurityProfileConfig.workloadIsolation`: read when sandboxd starts.
// Talos says the list is not exhaustive ("a setting consumed by a long-running service only takes
// effect when that service restarts"); these are the ones it names. Each field is kept as a digest
// of its value (configs hold keys), so two configs' boot-time fields compare without either being
// stored.
import { createHash } from "node:crypto";
import { canonicalJson, configDocuments } from "./configCompare";

/** The digest of each boot-time field of a config, by field name as printed. */
export type BootTimeFields = Readonly<Record<string, string>>;

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function digest(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex").slice(0, 32);
}

/** The volume documents that carry an `encryption` section (Talos 1.13/1.14 schemas). */
const VOLUME_KINDS = ["VolumeConfig", "UserVolumeConfig", "RawVolumeConfig", "SwapVolumeConfig"];

/**
 * Fields whose change matters only for what the node already set up at boot: a kernel module it
 * loaded, a volume it unlocked. A field new since the boot is applied by the running node (a new
 * module is loaded, a new volume provisioned), so only a changed or removed one waits for a reboot.
 */
const SET_UP_AT_BOOT =
  /^v1alpha1 machine\.kernel\.modules |^KernelModuleConfig | encryption$|systemDiskEncryption$/;

/** The digest of each boot-time field a config sets. */
export function bootTimeFields(config: string): BootTimeFields {
  const fields: Record<string, string> = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined) fields[name] = digest(value);
  };
  for (const [key, document] of configDocuments(config)) {
    if (!isMapping(document)) continue;
    if (key === "v1alpha1") {
      const machine = isMapping(document.machine) ? document.machine : {};
      const cluster = isMapping(document.cluster) ? document.cluster : {};
      put("v1alpha1 cluster.etcd", cluster.etcd);
      put("v1alpha1 machine.env", machine.env);
      put("v1alpha1 machine.systemDiskEncryption", machine.systemDiskEncryption);
      const kernel = isMapping(machine.kernel) ? machine.kernel : {};
      for (const module of Array.isArray(kernel.modules) ? kernel.modules : []) {
        if (isMapping(module) && typeof module.name === "string")
          put(`v1alpha1 machine.kernel.modules ${module.name}`, module.parameters ?? []);
      }
      continue;
    }
    const kind = document.kind;
    const name = typeof document.name === "string" ? document.name : "";
    if (kind === "EnvironmentConfig") put("EnvironmentConfig", document.variables ?? {});
    else if (kind === "KernelModuleConfig")
      put(`KernelModuleConfig ${name}`, document.parameters ?? []);
    else if (kind === "SecurityProfileConfig")
      put("SecurityProfileConfig workloadIsolation", document.workloadIsolation ?? false);
    else if (typeof kind === "string" && VOLUME_KINDS.includes(kind))
      put(`${kind} ${name} encryption`, document.encryption);
  }
  // Without the document, workload isolation is off (a cluster upgraded to 1.14 has none).
  fields["SecurityProfileConfig workloadIsolation"] ??= digest(false);
  return fields;
}

/**
 * The boot-time fields of `now` that differ from the config the node booted (`booted`): each one a
 * reboot would change. Names only, never values.
 */
export function bootTimeChanges(booted: BootTimeFields, now: BootTimeFields): string[] {
  const changed: string[] = [];
  for (const name of [...new Set([...Object.keys(booted), ...Object.keys(now)])].sort()) {
    const before = booted[name];
    const after = now[name];
    if (before === after) continue;
    if (before === undefined && SET_UP_AT_BOOT.test(name)) continue;
    changed.push(
      before === undefined
        ? `${name} (set since the boot)`
        : after === undefined
          ? `${name} (removed since the boot)`
          : `${name} (changed since the boot)`,
    );
  }
  return changed;
}
