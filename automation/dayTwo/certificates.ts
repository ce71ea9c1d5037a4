// The certificates a cluster's operators depend on, read from what the stack exports and what the
// nodes present, each with its NotAfter and the whole days left. The talosconfig client certificate
// and the admin kubeconfig's are valid 365 days (Talos machinery's generate constants) and nothing
// renews them between runs of `up`, so a day-two command or the drift job would only fail once they
// have expired; `certs` (certsCommand.ts) reports them ahead of time. Private keys are never parsed
// or kept here: only certificates, which are public.
import { X509Certificate } from "node:crypto";
import { parse } from "yaml";
import { UserError } from "../errors";
export { DEFAULT_MIN_DAYS, parseMinDays } from "./options";

/** Milliseconds in a day. */
const DAY_MS = 24 * 60 * 60_000;

/** What a certificate is, for the report. */
export type CertificateKind =
  "talosconfig client" | "Talos CA" | "kubeconfig client" | "Kubernetes CA" | "node API (apid)";

/** One certificate as reported. */
export interface CertificateReport {
  /** `talosconfig client`, `Talos CA`, `cp-1 API (apid)`, … */
  readonly name: string;
  readonly kind: CertificateKind;
  readonly subject: string;
  readonly notAfter: Date;
  /** Whole days until NotAfter (negative once expired). */
  readonly daysLeft: number;
  /** Hours until NotAfter (negative once expired), for the short-lived node API certificates. */
  readonly hoursLeft: number;
}

/**
 * Talos issues a node's API (apid) certificate for 24 hours and reissues it every 12 (siderolabs/
 * crypto x509.DefaultCertificateValidityDuration; machined's secrets.APIController refreshes it at
 * half that), so it always has less than a day left: `--min-days` cannot apply to it. It counts as
 * expiring only when its renewal is overdue, with fewer than this many hours left.
 */
export const NODE_API_OVERDUE_HOURS = 6;

/** Whether a certificate is under the threshold (a node API certificate: its renewal overdue). */
export function isExpiring(report: CertificateReport, minDays: number): boolean {
  return report.kind === "node API (apid)"
    ? report.hoursLeft < NODE_API_OVERDUE_HOURS
    : report.daysLeft < minDays;
}

/** A certificate that could not be read (a node that does not answer), with why. */
export interface UnreadCertificate {
  readonly name: string;
  readonly kind: CertificateKind;
  readonly error: string;
}

/** Whole days from `now` until `notAfter`, rounded down (a certificate expiring in 29.9 days has 29 left). */
export function daysLeft(notAfter: Date, now: number): number {
  return Math.floor((notAfter.getTime() - now) / DAY_MS);
}

/** The report line of a parsed certificate. */
export function reportCertificate(
  name: string,
  kind: CertificateKind,
  certificate: X509Certificate,
  now: number,
): CertificateReport {
  const notAfter = new Date(certificate.validTo);
  return {
    name,
    kind,
    subject: certificate.subject.replace(/\n/g, ", "),
    notAfter,
    daysLeft: daysLeft(notAfter, now),
    hoursLeft: Math.floor((notAfter.getTime() - now) / 3_600_000),
  };
}

/** Parses a base64-encoded PEM (the talosconfig's and kubeconfig's `*-data` fields); names the field on failure. */
export function certificateFromBase64(what: string, value: unknown): X509Certificate {
  if (typeof value !== "string" || value.trim() === "") {
    throw new UserError({
      what,
      problem: "holds no certificate",
      got: value === undefined ? "nothing" : typeof value,
      fix: "Run npm run platform -- up <env> so the stack exports it again",
    });
  }
  try {
    return new X509Certificate(Buffer.from(value, "base64"));
  } catch (error) {
    throw new UserError({
      what,
      problem: "is not a base64-encoded PEM certificate",
      got: `${value.length} characters (${(error as Error).message})`,
      fix: "Run npm run platform -- up <env> so the stack exports it again",
    });
  }
}

/** Parses YAML that is a secret: a syntax error is reported without echoing the text. */
function parseSecretYaml(what: string, text: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    doc = undefined;
  }
  if (doc === null || typeof doc !== "object") {
    throw new UserError({
      what,
      problem: "is not a YAML mapping",
      got: `${text.length} characters (not shown: it holds a private key)`,
      fix: "Run npm run platform -- up <env> so the stack exports it again",
    });
  }
  return doc as Record<string, unknown>;
}

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};

/**
 * The talosconfig's client certificate and the Talos (OS) CA, of its current context (talosctl's
 * own choice), else its only one.
 */
export function talosconfigCertificates(talosconfig: string, now: number): CertificateReport[] {
  const doc = parseSecretYaml("the talosconfig output", talosconfig);
  const contexts = record(doc.contexts);
  const names = Object.keys(contexts);
  const current =
    typeof doc.context === "string" ? doc.context : names.length === 1 ? names[0] : undefined;
  const context = current === undefined ? undefined : contexts[current];
  if (context === undefined) {
    throw new UserError({
      what: "the talosconfig output",
      problem: "has no current context",
      got: JSON.stringify({ context: doc.context ?? null, contexts: names }),
      fix: "Run npm run platform -- up <env> so the stack exports it again",
    });
  }
  const { crt, ca } = record(context);
  return [
    reportCertificate(
      "talosconfig client",
      "talosconfig client",
      certificateFromBase64(`talosconfig ${current}.crt`, crt),
      now,
    ),
    reportCertificate(
      "Talos CA",
      "Talos CA",
      certificateFromBase64(`talosconfig ${current}.ca`, ca),
      now,
    ),
  ];
}

/** The admin kubeconfig's client certificate and the Kubernetes CA, of its current context. */
export function kubeconfigCertificates(kubeconfig: string, now: number): CertificateReport[] {
  const doc = parseSecretYaml("the kubeconfig output", kubeconfig);
  const byName = (list: unknown, name: unknown) => {
    const items = Array.isArray(list) ? list.map(record) : [];
    return record(items.find((item) => item.name === name) ?? (items.length === 1 ? items[0] : {}));
  };
  const context = record(byName(doc.contexts, doc["current-context"]).context);
  const cluster = record(byName(doc.clusters, context.cluster).cluster);
  const user = record(byName(doc.users, context.user).user);
  return [
    reportCertificate(
      "kubeconfig client",
      "kubeconfig client",
      certificateFromBase64("kubeconfig client-certificate-data", user["client-certificate-data"]),
      now,
    ),
    reportCertificate(
      "Kubernetes CA",
      "Kubernetes CA",
      certificateFromBase64(
        "kubeconfig certificate-authority-data",
        cluster["certificate-authority-data"],
      ),
      now,
    ),
  ];
}

/**
 * The certificates under the threshold: expired or with fewer than `minDays` whole days left (a node
 * API certificate: fewer than {@link NODE_API_OVERDUE_HOURS} hours).
 */
export function expiringCertificates(
  reports: readonly CertificateReport[],
  minDays: number,
): CertificateReport[] {
  return reports.filter((r) => isExpiring(r, minDays));
}

/** The report as a table (NAME, SUBJECT, NOT AFTER, DAYS LEFT, STATUS), unread ones at the end. */
export function formatCertificates(
  reports: readonly CertificateReport[],
  unread: readonly UnreadCertificate[],
  minDays: number,
): string {
  const header = ["CERTIFICATE", "SUBJECT", "NOT AFTER", "DAYS LEFT", "STATUS"];
  const status = (r: CertificateReport) =>
    r.hoursLeft < 0
      ? "expired"
      : !isExpiring(r, minDays)
        ? "ok"
        : r.kind === "node API (apid)"
          ? `renewal overdue (${r.hoursLeft}h left)`
          : `under ${minDays} days`;
  const cells = [
    ...reports.map((r) => [
      r.name,
      r.subject,
      r.notAfter.toISOString().replace(/\.\d{3}Z$/, "Z"),
      String(r.daysLeft),
      status(r),
    ]),
    ...unread.map((u) => [u.name, "?", "?", "?", "unread"]),
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  const lines = [line(header), ...cells.map(line)];
  for (const u of unread) lines.push(`${u.name}: ${u.error}`);
  return `${lines.join("\n")}\n`;
}
