import { createHash } from "node:crypto";

/**
 * A stable, locally administered unicast MAC derived from `seed` (e.g. `staging/1011`), for VMs whose
 * stack entry names none: the Talos config selects the link by this MAC, so it must never change.
 */
export function deriveMac(seed: string): string {
  const bytes = createHash("sha256").update(seed).digest().subarray(0, 5);
  // 0x02: locally administered (bit 1 set), unicast (bit 0 clear).
  return ["02", ...Array.from(bytes, (b) => b.toString(16).padStart(2, "0"))].join(":");
}
