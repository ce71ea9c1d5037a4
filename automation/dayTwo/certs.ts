// `certs <env>`: every certificate the operators and the drift job depend on, with its NotAfter and
// the days left: the talosconfig's client certificate and the Talos CA, the admin kubeconfig's client
// certificate and the Kubernetes CA (all from the stack's outputs), and the certificate each node's
// Talos API presents. Exit 7 when one has fewer than `--min-days` left (the drift job: 30), 1 when a
// node's could not be read, else 0.
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, errorReason } from "../errors";
import {
  type CertificateReport,
  type UnreadCertificate,
  expiringCertificates,
  formatCertificates,
  isExpiring,
  kubeconfigCertificates,
  reportCertificate,
  talosconfigCertificates,
} from "./certificates";
import type { DeployedCluster } from "./cluster";
import type { DayTwoDeps } from "./deps";
import { type ClientIdentity, TALOS_API_PORT } from "./peerCertificate";
import { runDayTwo } from "./run";
import { parse } from "yaml";

/** How long one node's TLS handshake may take. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** Every certificate that could be read, and those that could not. */
export interface CertificateSurvey {
  readonly certificates: readonly CertificateReport[];
  readonly unread: readonly UnreadCertificate[];
}

/**
 * Talos writes its Ed25519 keys as PKCS#8 under its own PEM label, `ED25519 PRIVATE KEY` (siderolabs/
 * crypto x509); OpenSSL reads PKCS#8 only under `PRIVATE KEY` and fails with "DECODER
 * routines::unsupported" otherwise. The DER inside is the same.
 */
export function standardKeyPem(key: string): string {
  return key.replace(/-----(BEGIN|END) ED25519 PRIVATE KEY-----/g, "-----$1 PRIVATE KEY-----");
}

/** The talosconfig's client certificate and key, decoded in memory, offered to apid. */
export function clientIdentity(talosconfig: string): ClientIdentity | undefined {
  try {
    const doc = parse(talosconfig) as {
      context?: string;
      contexts?: Record<string, { crt?: string; key?: string }>;
    };
    const context = doc.contexts?.[doc.context ?? ""] ?? Object.values(doc.contexts ?? {})[0];
    if (!context?.crt || !context.key) return undefined;
    return {
      cert: Buffer.from(context.crt, "base64").toString("utf8"),
      key: standardKeyPem(Buffer.from(context.key, "base64").toString("utf8")),
    };
  } catch {
    return undefined;
  }
}

/** Reads every certificate; a node that does not answer is listed as unread, never thrown. */
export async function surveyCertificates(
  deps: DayTwoDeps,
  cluster: DeployedCluster,
): Promise<CertificateSurvey> {
  const now = deps.clock.now();
  const certificates: CertificateReport[] = [...talosconfigCertificates(cluster.talosconfig, now)];
  const unread: UnreadCertificate[] = [];
  if (cluster.kubeconfig !== undefined) {
    certificates.push(...kubeconfigCertificates(cluster.kubeconfig, now));
  } else {
    unread.push({
      name: "kubeconfig client",
      kind: "kubeconfig client",
      error: "the stack exports no kubeconfig (not bootstrapped yet)",
    });
  }
  const identity = clientIdentity(cluster.talosconfig);
  for (const node of cluster.nodes) {
    const name = `${node.name} API (apid)`;
    try {
      const certificate = await deps.peerCertificate(
        node.address,
        TALOS_API_PORT,
        HANDSHAKE_TIMEOUT_MS,
        identity,
      );
      certificates.push(reportCertificate(name, "node API (apid)", certificate, now));
    } catch (error) {
      unread.push({ name, kind: "node API (apid)", error: errorReason(error) });
    }
  }
  return { certificates, unread };
}

/** What to do about expiring certificates, by kind. */
export function renewalHint(env: string, expiring: readonly CertificateReport[]): string[] {
  const kinds = new Set(expiring.map((c) => c.kind));
  const hints: string[] = [];
  if (kinds.has("talosconfig client") || kinds.has("kubeconfig client")) {
    hints.push(
      `client certificates: npm run platform -- up ${env} renews the kubeconfig's within certificateRenewalDuration (2160h) of its expiry and the talosconfig's within its last month (docs/day-two.md#certificates)`,
    );
  }
  if (kinds.has("Talos CA") || kinds.has("Kubernetes CA")) {
    hints.push("a CA: it has to be rotated (docs/day-two.md#certificates)");
  }
  if (kinds.has("node API (apid)")) {
    hints.push(
      "a node's API certificate: Talos reissues it every 12 hours; one that was not is a node whose machined is stuck: reboot it",
    );
  }
  return hints;
}

/** `certs` as asked. */
interface CertsCommand {
  readonly env: string;
  readonly minDays: number;
  readonly json: boolean;
  readonly installCli: boolean;
}

/** The JSON form of a survey (`--json`, and `health --json`'s `certificates`). */
export function certificatesJson(survey: CertificateSurvey, minDays: number) {
  return {
    minDays,
    certificates: survey.certificates.map((c) => ({
      name: c.name,
      kind: c.kind,
      subject: c.subject,
      notAfter: c.notAfter.toISOString(),
      daysLeft: c.daysLeft,
      expiring: isExpiring(c, minDays),
    })),
    unread: survey.unread,
  };
}

/** Runs `certs`: 0 when every certificate has at least `minDays` left, 7 when not, 1 when one was unread. */
export async function certs(ctx: CliContext, request: CertsCommand): Promise<ExitCodeValue> {
  const survey = await runDayTwo(
    ctx,
    { command: "certs", env: request.env, installCli: request.installCli, readOnly: true },
    ({ deps, cluster }) => surveyCertificates(deps, cluster),
  );
  if (request.json) {
    ctx.stdout.write(`${JSON.stringify(certificatesJson(survey, request.minDays), null, 2)}\n`);
  } else {
    ctx.stdout.write(formatCertificates(survey.certificates, survey.unread, request.minDays));
  }
  const expiring = expiringCertificates(survey.certificates, request.minDays);
  if (expiring.length > 0) {
    ctx.stderr.write(
      `certs ${request.env}: ${expiring.length} certificate${expiring.length === 1 ? "" : "s"} under ${request.minDays} days: ${expiring.map((c) => `${c.name} (${c.daysLeft} days)`).join(", ")}\n` +
        renewalHint(request.env, expiring)
          .map((hint) => `  ${hint}\n`)
          .join(""),
    );
    return ExitCode.expiring;
  }
  if (survey.unread.length > 0) {
    ctx.stderr.write(
      `certs ${request.env}: ${survey.unread.length} certificate${survey.unread.length === 1 ? "" : "s"} could not be read (${survey.unread.map((u) => u.name).join(", ")}); the others have at least ${request.minDays} days left\n`,
    );
    return ExitCode.failed;
  }
  const soonest = Math.min(...survey.certificates.map((c) => c.daysLeft));
  ctx.stderr.write(
    `certs ${request.env}: ${survey.certificates.length} certificates, the soonest expires in ${soonest} days (threshold ${request.minDays})\n`,
  );
  return ExitCode.ok;
}
