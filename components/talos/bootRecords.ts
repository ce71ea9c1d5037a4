// What each node booted with, kept in the stack's outputs so that every day-two command (drift in
// CI included) can tell whether a node's config waits for a reboot. Talos 1.14 applies every config
// change to the running node at once (apply mode `auto` means no-reboot; the `reboot` mode is gone),
// so nothing is staged any more and the node itself no longer shows the config it booted: its
// MachineConfig `v1alpha1` and `persistent` are both the pushed one. Only a few fields take effect
// at boot (Talos documents them: `.cluster.etcd`, the environment, kernel modules, volume encryption
// keys, workload isolation), so the CLI records their digests for the node's boot (Talos 1.14's
// BootID) while the node still runs the config it booted, right before `platform up` pushes, and
// the engine run that follows exports them. Pure: the CLI computes the records, the program only
// carries them forward.

/** The output the records are kept in (secret: digests of config fields). */
export const BOOT_RECORDS_OUTPUT = "bootRecords";

/** What one node booted with. */
export interface BootRecord {
  /** Talos' BootID of that boot (`talosctl get bootid`): a reboot makes the record stale. */
  readonly bootId: string;
  /** A digest of each boot-time field of the config it booted, by field (bootTime.ts). */
  readonly fields: Readonly<Record<string, string>>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The records in an output's value, dropping whatever does not have their shape. */
export function bootRecordsOf(value: unknown): Record<string, BootRecord> {
  if (!isRecord(value)) return {};
  const records: Record<string, BootRecord> = {};
  for (const [name, entry] of Object.entries(value)) {
    if (!isRecord(entry) || typeof entry.bootId !== "string" || !isRecord(entry.fields)) continue;
    const fields = Object.entries(entry.fields).filter(
      (field): field is [string, string] => typeof field[1] === "string",
    );
    records[name] = { bootId: entry.bootId, fields: Object.fromEntries(fields) };
  }
  return records;
}

/**
 * This run's records: the last outputs' with what the CLI captured in this run over them, for the
 * stack's nodes only (a record of a node that left the stack goes with it).
 */
export function mergeBootRecords(
  last: unknown,
  captured: unknown,
  nodes: readonly string[],
): Record<string, BootRecord> {
  const merged = { ...bootRecordsOf(last), ...bootRecordsOf(captured) };
  return Object.fromEntries(
    nodes.filter((name) => merged[name] !== undefined).map((name) => [name, merged[name]]),
  );
}
