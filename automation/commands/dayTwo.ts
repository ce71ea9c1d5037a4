// Registers the day-two commands (preflight, upgrade talos|kubernetes, etcd snapshot|restore|backups|defrag,
// replace-node, drift, certs, health, rollout) on the CLI's commander program; the work is in automation/dayTwo/,
// loaded only when one of these commands runs (`--help` and usage errors load none of it).
import { type Command, Option } from "commander";
import type { CliContext } from "../context";
import { type ExitCodeValue, UserError } from "../errors";
import { formatDuration, parseDuration } from "../dayTwo/clock";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_KEEP_SNAPSHOTS,
  DEFAULT_MIN_DAYS,
  DEFAULT_KUBERNETES_TIMEOUTS,
  DEFAULT_RESTORE_WAIT_MS,
  DEFAULT_ROLLOUT_TIMEOUTS,
  PREFLIGHT_HEALTH_TIMEOUT_MS,
  kubernetesTarget,
  parseKeep,
  parseMaxUnavailable,
  parseMinDays,
  talosTarget,
} from "../dayTwo/options";

/** Examples for the CLI's help. */
export const DAY_TWO_EXAMPLES = [
  "preflight staging",
  "upgrade talos staging --to v1.14.1",
  "upgrade talos prod --to v1.14.1 --max-unavailable 2 --resume",
  "upgrade kubernetes staging --to 1.36.4",
  "etcd snapshot staging",
  "etcd restore staging --from .pulumi-state/etcd-snapshots/staging/<file>.snapshot",
  "replace-node staging stg-cp-2",
  "drift prod",
  "certs prod --min-days 30",
  "health prod",
  "etcd defrag staging",
  "rollout staging --dry-run",
  "rollout prod",
  "rotate-ca staging --talos",
];

interface Common {
  installCli?: boolean;
}

const envArgument = "environment: the stack name (a Pulumi.<env>.yaml of the foundation layer)";

function installCli(): Option {
  return new Option(
    "--install-cli",
    "install the Pulumi CLI into ~/.pulumi/versions/<sdk version> when it is missing (outputs are read through it)",
  );
}

/**
 * A wait settable on the command line (`--health-timeout 20m`), its default shown in the help.
 * The value reaches the command in milliseconds.
 */
function waitOption(flag: string, description: string, defaultMs: number): Option {
  return new Option(`${flag} <duration>`, description)
    .argParser((value: string) => parseDuration(flag, value))
    .default(defaultMs, formatDuration(defaultMs));
}

/** `--min-days`: a certificate with fewer whole days left fails `certs` and `health` (exit 7). */
function minDaysOption(): Option {
  return new Option(
    "--min-days <days>",
    "fail (exit 7) when a certificate has fewer whole days left",
  )
    .argParser(parseMinDays)
    .default(DEFAULT_MIN_DAYS);
}

function keepOption(): Option {
  return new Option(
    "--keep-snapshots <n>",
    "how many local etcd snapshots of this environment to keep",
  )
    .argParser(parseKeep)
    .default(DEFAULT_KEEP_SNAPSHOTS);
}

/**
 * Parses a version option, naming the option itself in the error (`--talos`, `--to`): checked while
 * the command line is parsed, before anything is read or written.
 */
function versionOption(flag: string, parse: (value: string) => string, example: string) {
  return (value: string): string => {
    try {
      return parse(value);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      throw new UserError({
        ...error.problem,
        what: flag,
        fix: `Give the exact release, e.g. ${flag} ${example}`,
      });
    }
  };
}
const talosVersion = (flag: string) => versionOption(flag, talosTarget, "v1.14.1");
const kubernetesVersion = (flag: string) => versionOption(flag, kubernetesTarget, "1.37.1");

/** Adds the day-two commands; `done` receives each command's exit code. */
export function registerDayTwoCommands(
  program: Command,
  ctx: CliContext,
  done: (code: ExitCodeValue) => void,
): void {
  program
    .command("preflight")
    .description(
      "every check a change needs, all reported at once (versions, talosctl, nodes, etcd)",
    )
    .argument("<env>", envArgument)
    .addOption(
      new Option(
        "--talos <version>",
        "check an upgrade to this Talos version (default: the stack file's)",
      ).argParser(talosVersion("--talos")),
    )
    .addOption(
      new Option(
        "--kubernetes <version>",
        "check an upgrade to this Kubernetes version (default: the stack file's)",
      ).argParser(kubernetesVersion("--kubernetes")),
    )
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster to be healthy",
        PREFLIGHT_HEALTH_TIMEOUT_MS,
      ),
    )
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & { talos?: string; kubernetes?: string; healthTimeout: number },
      ) => {
        const { preflight } = await import("../dayTwo/preflight/command");
        done(
          await preflight(ctx, {
            env,
            installCli: options.installCli === true,
            healthTimeoutMs: options.healthTimeout,
            ...(options.talos !== undefined ? { talos: options.talos } : {}),
            ...(options.kubernetes !== undefined ? { kubernetes: options.kubernetes } : {}),
          }),
        );
      },
    );

  const upgrade = program
    .command("upgrade")
    .description(
      "rolling upgrades of Talos or Kubernetes through talosctl (then the stack file is bumped)",
    );
  upgrade
    .command("talos")
    .description(
      "upgrade Talos node by node: control planes one at a time, then workers, gated on health",
    )
    .argument("<env>", envArgument)
    .addOption(
      new Option(
        "--to <version>",
        "the Talos version to upgrade to, e.g. v1.14.1 (one minor at a time)",
      )
        .argParser(talosVersion("--to"))
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        "--max-unavailable <n>",
        "workers upgraded at once (default and maximum: cluster.rollout.maxUnavailableWorkers)",
      ).argParser(parseMaxUnavailable),
    )
    .option("--resume", "continue a roll that stopped: skip nodes already on the target")
    .option("--no-write", "do not update the stack file; print the line to commit instead")
    .addOption(
      waitOption(
        "--upgrade-timeout",
        "how long talosctl upgrade of one node (or batch) may take, reboot included",
        DEFAULT_ROLLOUT_TIMEOUTS.upgradeMs,
      ),
    )
    .addOption(
      waitOption(
        "--drain-timeout",
        "how long talosctl may drain each node (evict its pods) before its reboot",
        DEFAULT_DRAIN_TIMEOUT_MS,
      ),
    )
    .addOption(
      waitOption(
        "--node-timeout",
        "how long an upgraded node may take to answer again",
        DEFAULT_ROLLOUT_TIMEOUTS.nodeMs,
      ),
    )
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster after each node (or batch), and in preflight",
        DEFAULT_ROLLOUT_TIMEOUTS.healthMs,
      ),
    )
    .addOption(keepOption())
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & {
          to: string;
          maxUnavailable?: number;
          resume?: boolean;
          drainTimeout: number;
          write: boolean;
          keepSnapshots: number;
          upgradeTimeout: number;
          nodeTimeout: number;
          healthTimeout: number;
        },
      ) => {
        const { upgradeTalos } = await import("../dayTwo/talosUpgrade");
        done(
          await upgradeTalos(ctx, {
            env,
            to: options.to,
            ...(options.maxUnavailable !== undefined
              ? { maxUnavailable: options.maxUnavailable }
              : {}),
            drainTimeoutMs: options.drainTimeout,
            resume: options.resume === true,
            write: options.write,
            keepSnapshots: options.keepSnapshots,
            installCli: options.installCli === true,
            timeouts: {
              upgradeMs: options.upgradeTimeout,
              nodeMs: options.nodeTimeout,
              healthMs: options.healthTimeout,
            },
          }),
        );
      },
    );
  upgrade
    .command("kubernetes")
    .description("upgrade Kubernetes with talosctl upgrade-k8s (dry run first), gated on health")
    .argument("<env>", envArgument)
    .addOption(
      new Option(
        "--to <version>",
        "the Kubernetes version to upgrade to, e.g. 1.37.1 (one minor at a time)",
      )
        .argParser(kubernetesVersion("--to"))
        .makeOptionMandatory(),
    )
    .option("--no-write", "do not update the stack file; print the line to commit instead")
    .option(
      "--allow-manifest-overwrite",
      "go on when the dry run shows upgrade-k8s would overwrite live objects of the bootstrap manifests (extraManifests, inlineManifests, Talos' own) with the config's",
    )
    .addOption(
      waitOption(
        "--upgrade-timeout",
        "how long talosctl upgrade-k8s may take (it rolls every control-plane component and kubelet)",
        DEFAULT_KUBERNETES_TIMEOUTS.upgradeMs,
      ),
    )
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster, in preflight and after the upgrade",
        DEFAULT_KUBERNETES_TIMEOUTS.healthMs,
      ),
    )
    .addOption(keepOption())
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & {
          to: string;
          write: boolean;
          allowManifestOverwrite?: boolean;
          keepSnapshots: number;
          upgradeTimeout: number;
          healthTimeout: number;
        },
      ) => {
        const { upgradeKubernetes } = await import("../dayTwo/kubernetesUpgrade");
        done(
          await upgradeKubernetes(ctx, {
            env,
            to: options.to,
            write: options.write,
            allowManifestOverwrite: options.allowManifestOverwrite === true,
            keepSnapshots: options.keepSnapshots,
            installCli: options.installCli === true,
            upgradeTimeoutMs: options.upgradeTimeout,
            healthTimeoutMs: options.healthTimeout,
          }),
        );
      },
    );

  const etcd = program.command("etcd").description("etcd snapshots and disaster recovery");
  etcd
    .command("snapshot")
    .description(
      "take an etcd snapshot into .pulumi-state/etcd-snapshots/<env>/ (mode 0600) and print its path",
    )
    .argument("<env>", envArgument)
    .option("--out <file>", "write it here instead (not pruned)")
    .option(
      "--upload",
      "also encrypt it (etcdBackups.encryption.age) and upload it to etcdBackups.destination, and print its address",
    )
    .addOption(keepOption())
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & { out?: string; keepSnapshots: number; upload?: boolean },
      ) => {
        const { etcdSnapshot } = await import("../dayTwo/etcd");
        done(
          await etcdSnapshot(ctx, {
            env,
            keepSnapshots: options.keepSnapshots,
            installCli: options.installCli === true,
            upload: options.upload === true,
            ...(options.out !== undefined ? { out: options.out } : {}),
          }),
        );
      },
    );
  etcd
    .command("restore")
    .description(
      "restore etcd from a snapshot after lost quorum (Talos' disaster recovery, step by step)",
    )
    .argument("<env>", envArgument)
    .requiredOption(
      "--from <file|url>",
      "the snapshot to restore: a local file, or a backup at gs://… or file://… (decrypted when it ends in .age)",
    )
    .option(
      "--age-identity <file>",
      "the age identity (age-keygen's file) an encrypted backup is decrypted with; else ETCD_BACKUP_AGE_IDENTITY",
    )
    .option("--yes", "confirm every step in advance (non-interactive)")
    .option(
      "--allow-healthy",
      "restore even though etcd has quorum (a drill: the cluster goes back to the snapshot)",
    )
    .addOption(
      waitOption(
        "--wait-timeout",
        "each wait of the recovery: etcd reaching Preparing, every control plane back, health",
        DEFAULT_RESTORE_WAIT_MS,
      ),
    )
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & {
          from: string;
          ageIdentity?: string;
          yes?: boolean;
          allowHealthy?: boolean;
          waitTimeout: number;
        },
      ) => {
        const { etcdRestore } = await import("../dayTwo/etcd");
        done(
          await etcdRestore(ctx, {
            env,
            from: options.from,
            ...(options.ageIdentity !== undefined ? { ageIdentity: options.ageIdentity } : {}),
            yes: options.yes === true,
            allowHealthy: options.allowHealthy === true,
            installCli: options.installCli === true,
            waitTimeoutMs: options.waitTimeout,
          }),
        );
      },
    );

  etcd
    .command("backups")
    .description(
      "list the off-site backups (etcdBackups.destination), newest first: name, time, size, age; exit 8 when there is none or the newest is older than twice the schedule",
    )
    .argument("<env>", envArgument)
    .option("--json", "print the list as JSON")
    .option(
      "--prune",
      "delete the backups older than etcdBackups.retentionDays (never the newest), with your credentials",
    )
    .action(async (env: string, options: { json?: boolean; prune?: boolean }) => {
      const { etcdBackups } = await import("../dayTwo/etcdBackups");
      done(
        await etcdBackups(ctx, { env, json: options.json === true, prune: options.prune === true }),
      );
    });

  etcd
    .command("defrag")
    .description(
      "defragment each etcd member (its database file shrinks to what is in use): one at a time, the leader last, behind the quorum and health gates",
    )
    .argument("<env>", envArgument)
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster, before the first member and after each",
        PREFLIGHT_HEALTH_TIMEOUT_MS,
      ),
    )
    .addOption(installCli())
    .action(async (env: string, options: Common & { healthTimeout: number }) => {
      const { etcdDefrag } = await import("../dayTwo/etcdDefrag");
      done(
        await etcdDefrag(ctx, {
          env,
          healthTimeoutMs: options.healthTimeout,
          installCli: options.installCli === true,
        }),
      );
    });

  program
    .command("certs")
    .description(
      "every certificate's NotAfter and days left (talosconfig and kubeconfig clients, the Talos and Kubernetes CAs, each node's API); exit 7 under --min-days",
    )
    .argument("<env>", envArgument)
    .addOption(minDaysOption())
    .option("--json", "print the report as JSON")
    .addOption(installCli())
    .action(async (env: string, options: Common & { minDays: number; json?: boolean }) => {
      const { certs } = await import("../dayTwo/certs");
      done(
        await certs(ctx, {
          env,
          minDays: options.minDays,
          json: options.json === true,
          installCli: options.installCli === true,
        }),
      );
    });

  program
    .command("health")
    .description(
      "one report: Talos health, etcd per member (size, in use, leader, alarms), certificates' days left, newest backup, version skew; exit 8 unhealthy, 7 a certificate under --min-days",
    )
    .argument("<env>", envArgument)
    .addOption(minDaysOption())
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster to be healthy",
        PREFLIGHT_HEALTH_TIMEOUT_MS,
      ),
    )
    .option("--json", "print the report as JSON")
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & { minDays: number; healthTimeout: number; json?: boolean },
      ) => {
        const { health } = await import("../dayTwo/health");
        const { newestBackupOf } = await import("../dayTwo/etcdBackups");
        done(
          await health(ctx, {
            newestBackup: newestBackupOf(ctx),
            env,
            minDays: options.minDays,
            healthTimeoutMs: options.healthTimeout,
            json: options.json === true,
            installCli: options.installCli === true,
          }),
        );
      },
    );

  program
    .command("replace-node")
    .description(
      "take a node out cleanly (drained when it still runs; its etcd member for a control plane), then say how up replaces it",
    )
    .argument("<env>", envArgument)
    .argument("<node>", "the node's name in the stack file")
    .option("--yes", "confirm the drain and the etcd member removal in advance")
    .option(
      "--no-drain",
      "take a node that still runs out without `kubectl drain` first (its pods stop with it instead of moving)",
    )
    .addOption(
      waitOption(
        "--drain-timeout",
        "how long `kubectl drain` may take to evict the node's pods",
        DEFAULT_DRAIN_TIMEOUT_MS,
      ),
    )
    .addOption(installCli())
    .action(
      async (
        env: string,
        node: string,
        options: Common & { yes?: boolean; drain: boolean; drainTimeout: number },
      ) => {
        const { replaceNode } = await import("../dayTwo/replaceNode");
        done(
          await replaceNode(ctx, {
            env,
            node,
            yes: options.yes === true,
            drain: options.drain,
            drainTimeoutMs: options.drainTimeout,
            installCli: options.installCli === true,
          }),
        );
      },
    );

  program
    .command("drift")
    .description(
      "compare each node's Talos, Kubernetes and machine config with the stack; exit 6 on drift",
    )
    .argument("<env>", envArgument)
    .addOption(installCli())
    .action(async (env: string, options: Common) => {
      const { drift } = await import("../dayTwo/drift");
      done(await drift(ctx, { env, installCli: options.installCli === true }));
    });

  program
    .command("rollout")
    .description(
      "reboot the nodes whose config waits for a reboot (staged by up, or on Talos 1.14 a boot-time field changed since the node booted): control planes one at a time, then workers, gated on quorum and health",
    )
    .argument("<env>", envArgument)
    .addOption(
      new Option(
        "--max-unavailable <n>",
        "workers rebooted at once (default and maximum: cluster.rollout.maxUnavailableWorkers)",
      ).argParser(parseMaxUnavailable),
    )
    .option(
      "--dry-run",
      "list the nodes whose config waits for a reboot, and what, without rebooting any",
    )
    .option(
      "--no-drain",
      "reboot without `kubectl drain` first (pods are stopped, not evicted; disruption budgets are not consulted)",
    )
    .addOption(
      waitOption(
        "--drain-timeout",
        "how long `kubectl drain` may take to evict a node's pods before the roll stops",
        DEFAULT_DRAIN_TIMEOUT_MS,
      ),
    )
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: {
          maxUnavailable?: number;
          dryRun?: boolean;
          installCli?: boolean;
          drain: boolean;
          drainTimeout: number;
        },
      ) => {
        const { rollout } = await import("../dayTwo/rollout");
        done(
          await rollout(ctx, {
            env,
            dryRun: options.dryRun === true,
            installCli: options.installCli === true,
            drain: options.drain,
            drainTimeoutMs: options.drainTimeout,
            ...(options.maxUnavailable !== undefined
              ? { maxUnavailable: options.maxUnavailable }
              : {}),
          }),
        );
      },
    );

  program
    .command("rotate-ca")
    .description(
      "rotate the Talos API CA (--talos) or the Kubernetes CA (--kubernetes): the new CA accepted, then issuing, then the old one removed, node by node, each step an up gated on health; resumable",
    )
    .argument("<env>", envArgument)
    .option("--talos", "rotate the Talos API CA (a leaked talosconfig stops working)")
    .option("--kubernetes", "rotate the Kubernetes CA (a leaked kubeconfig stops working)")
    .addOption(
      waitOption(
        "--health-timeout",
        "how long talosctl health may wait for the cluster after each step",
        PREFLIGHT_HEALTH_TIMEOUT_MS,
      ),
    )
    .addOption(installCli())
    .action(
      async (
        env: string,
        options: Common & { talos?: boolean; kubernetes?: boolean; healthTimeout: number },
      ) => {
        if ((options.talos === true) === (options.kubernetes === true)) {
          throw new UserError({
            what: "rotate-ca",
            problem: "needs exactly one of --talos and --kubernetes",
            got: JSON.stringify(
              [options.talos && "--talos", options.kubernetes && "--kubernetes"]
                .filter(Boolean)
                .join(" "),
            ),
            fix: "Rotate one CA at a time: rotate-ca <env> --talos, then (if needed) rotate-ca <env> --kubernetes",
          });
        }
        const { rotateCa } = await import("../dayTwo/rotateCa");
        done(
          await rotateCa(ctx, {
            env,
            ca: options.talos === true ? "talos" : "kubernetes",
            installCli: options.installCli === true,
            healthTimeoutMs: options.healthTimeout,
            up: async (commandLine) => {
              const { runOperation } = await import("./operation");
              return runOperation(ctx, {
                operation: "up",
                layer: "foundation",
                env,
                installCli: options.installCli === true,
                yesDestroyProd: false,
                diff: false,
                skipMissingLayer: false,
                commandLine,
              });
            },
          }),
        );
      },
    );
}
