// Talos and Kubernetes version rules, from Talos' own support matrix. Pure: no resources, no config.
// semver's functions are imported one by one: its index loads the whole package, and the CLI parses
// versions before any command runs.
import type * as semver from "semver";
import semverCompare from "semver/functions/compare";
import semverParse from "semver/functions/parse";

/** One Talos minor release line and what it supports. */
export interface TalosRelease {
  /** `1.13`. */
  readonly minor: string;
  /** The oldest Talos version that may upgrade straight to this line. */
  readonly upgradeFrom: string;
  /** Oldest and newest supported Kubernetes minors, inclusive. */
  readonly kubernetes: { readonly min: string; readonly max: string };
}

/** The Talos lines this program knows, oldest first. A new line is a new row. */
export const TALOS_RELEASES: readonly TalosRelease[] = [
  { minor: "1.10", upgradeFrom: "1.8.0", kubernetes: { min: "1.28", max: "1.33" } },
  { minor: "1.11", upgradeFrom: "1.9.0", kubernetes: { min: "1.29", max: "1.34" } },
  { minor: "1.12", upgradeFrom: "1.10.0", kubernetes: { min: "1.30", max: "1.35" } },
  { minor: "1.13", upgradeFrom: "1.11.0", kubernetes: { min: "1.31", max: "1.36" } },
  { minor: "1.14", upgradeFrom: "1.12.0", kubernetes: { min: "1.32", max: "1.37" } },
];

/**
 * The oldest Talos line (node and config contract) the program configures. Its configs carry the
 * multi-document network config (HostnameConfig, LinkConfig, Layer2VIPConfig, ResolverConfig,
 * TimeSyncConfig), which Talos 1.12 introduced: a 1.10 node does not know these kinds ("not
 * registered") and cannot load its config, and under a 1.11 contract HostnameConfig conflicts with the
 * `stableHostname` flag the generator sets. Older rows above stay for the support matrix (upgrade paths).
 */
export const OLDEST_CONFIGURED = "1.12";

/**
 * The newest config contract the Talos provider's config generator knows: pulumiverse talos v0.8.1
 * wraps terraform-provider-talos v0.11.0, which generates configs with Talos' own machinery
 * (`github.com/siderolabs/talos/pkg/machinery` v1.13.0). Machinery 1.13 gates nothing on a contract
 * newer than 1.13 (its `config/contract.go` knows contracts up to `TalosVersion1_13`), so a 1.14
 * contract would be accepted and silently generate 1.13's configs, until a provider release with
 * machinery 1.14 switched every node's config to 1.14's documents at once. Raise it with the provider.
 */
export const GENERATOR_MACHINERY = "1.13";

/** A strict `MAJOR.MINOR.PATCH` with an optional leading `v`; undefined when malformed. */
export function parseVersion(value: string): semver.SemVer | undefined {
  if (!/^v?\d+\.\d+\.\d+$/.test(value)) return undefined;
  return semverParse(value.replace(/^v/, "")) ?? undefined;
}

/** `1.13` for `v1.13.9`. */
export function minorOf(version: semver.SemVer): string {
  return `${version.major}.${version.minor}`;
}

/** The release line a Talos version belongs to, if known. */
export function talosRelease(version: semver.SemVer): TalosRelease | undefined {
  return TALOS_RELEASES.find((release) => release.minor === minorOf(version));
}

/** Compares two `MAJOR.MINOR` strings numerically. */
export function compareMinor(a: string, b: string): number {
  return semverCompare(`${a}.0`, `${b}.0`);
}

/** True when the Talos release supports the Kubernetes version. */
export function supportsKubernetes(release: TalosRelease, kubernetes: semver.SemVer): boolean {
  const minor = minorOf(kubernetes);
  return (
    compareMinor(minor, release.kubernetes.min) >= 0 &&
    compareMinor(minor, release.kubernetes.max) <= 0
  );
}

/** `v1.13.9` — Talos versions are written with a `v` everywhere (images, installer tags). */
export function talosTag(version: semver.SemVer): string {
  return `v${version.version}`;
}
