// Whether a node's config waits for a reboot, whatever apply mode put it there. Talos 1.13 staged a
// change that needed a reboot (`staged_if_needing_reboot`); Talos 1.14 applies every change to the
// running node at once (its `auto` mode is no-reboot, `reboot` is gone: v1alpha1_server.go
// ApplyConfiguration), so a change of a field read only at boot (bootTime.ts) waits for the next
// reboot without anything being staged. What the node shows (config.AcquireController and
// ApplyConfiguration, Talos 1.13 and 1.14): at boot its config is loaded into MachineConfig
// `v1alpha1` at version 1 and no `persistent` exists; an apply replaces `persistent` and, unless
// staged, `v1alpha1`. So, in order:
//   1. `persistent` differs from `v1alpha1`: a staged config, all of it waits (Talos 1.13's way);
//   2. `v1alpha1` is still at version 1: the node runs what it booted, nothing waits;
//   3. it changed since the boot and the node has a BootID (1.14): its boot-time fields against the
//      record of what it booted (bootRecords.ts, in the stack's outputs) for that very boot;
//      without such a record nobody can tell, and it is said so;
//   4. no BootID (Talos 1.13): Talos itself decided at apply time, and staged what needed a reboot.
import type { BootRecord } from "../../components/talos/bootRecords";
import { bootTimeChanges, bootTimeFields } from "./bootTime";
import { configDifferences } from "./configCompare";
import type { TalosClient } from "./talosClient";

/** What waits for a node's reboot. */
export type RebootState =
  /** Nothing: it runs what it booted, or what it booted has every boot-time field of what it runs. */
  | { readonly kind: "none" }
  /** A staged config: `paths` where it differs from the running one. */
  | { readonly kind: "staged"; readonly paths: readonly string[] }
  /** A config applied since the boot whose boot-time `fields` the running node has not taken up. */
  | { readonly kind: "bootTime"; readonly fields: readonly string[] }
  /** Its config changed since the boot, and what it booted was not recorded. */
  | { readonly kind: "unknown"; readonly reason: string };

/** A node's reboot state, with the configs it was judged on (secrets: never print them). */
export interface NodeReboot {
  readonly state: RebootState;
  /** What the node runs (`v1alpha1`). */
  readonly running: string;
  /** What the node boots next: `persistent`, else the running config. */
  readonly nextBoot: string;
  /** Its BootID, when it was read (a config applied since the boot, on Talos 1.14). */
  readonly bootId?: string;
}

/** Reads a node's reboot state; `record` is what the outputs say it booted with. */
export async function rebootState(
  client: TalosClient,
  address: string,
  record: BootRecord | undefined,
): Promise<NodeReboot> {
  const configs = await client.machineConfigs(address);
  const { running } = configs;
  const nextBoot = configs.persistent ?? running;
  const judged = (state: RebootState): NodeReboot => ({ state, running, nextBoot });
  if (configs.persistent !== undefined) {
    const paths = configDifferences(configs.persistent, running);
    if (paths.length > 0) return judged({ kind: "staged", paths });
  }
  if (configs.runningVersion === 1) return judged({ kind: "none" });
  const bootId = await client.bootId(address);
  if (bootId === undefined) return judged({ kind: "none" });
  const booted = (state: RebootState): NodeReboot => ({ ...judged(state), bootId });
  if (record === undefined || record.bootId !== bootId) {
    return booted({
      kind: "unknown",
      reason: `its config changed since it booted (${configs.runningVersion - 1} ${configs.runningVersion === 2 ? "time" : "times"}) and the stack's outputs do not record what it booted with${record === undefined ? "" : " for this boot"} (\`platform up\` records it before it pushes)`,
    });
  }
  const fields = bootTimeChanges(record.fields, bootTimeFields(nextBoot));
  return booted(fields.length > 0 ? { kind: "bootTime", fields } : { kind: "none" });
}

/**
 * What a node booted with, for the outputs: readable only while the node still runs its boot config
 * (`v1alpha1` at version 1; a staged config does not change it) on a Talos with a BootID (1.14);
 * otherwise undefined.
 */
export async function captureBootRecord(
  client: TalosClient,
  address: string,
): Promise<BootRecord | undefined> {
  const configs = await client.machineConfigs(address);
  if (configs.runningVersion !== 1) return undefined;
  const bootId = await client.bootId(address);
  return bootId === undefined ? undefined : { bootId, fields: bootTimeFields(configs.running) };
}
