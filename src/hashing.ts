/** Streaming SHA-256, shared by source verification, `run --verify` and `verify`. */
import * as crypto from "node:crypto";

/** A digest as the manifest, the state and S3 metadata write it: `sha256:<64 lowercase hex>`. */
export const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;

export interface Digest {
  /** `sha256:<64 lowercase hex>` */
  sha256: string;
  size: number;
}

/** Hash a byte stream without holding it in memory. */
export async function digestStream(stream: AsyncIterable<Uint8Array | string>): Promise<Digest> {
  const hash = crypto.createHash("sha256");
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    hash.update(bytes);
    size += bytes.byteLength;
  }
  return { sha256: `sha256:${hash.digest("hex")}`, size };
}

/**
 * Lowercase hex SHA-256 of `data`, in one call where Node.js has `crypto.hash`
 * (20.12 and later): it skips creating a Hash object, which is most of the cost
 * for small inputs (many small files). A namespace import, because a named
 * import of a missing export would fail to load on earlier 20.x releases.
 */
export function sha256Hex(data: Uint8Array | string): string {
  return typeof crypto.hash === "function"
    ? crypto.hash("sha256", data, "hex")
    : crypto.createHash("sha256").update(data).digest("hex");
}

/** `sha256:` + lowercase hex SHA-256 of `bytes`. */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${sha256Hex(bytes)}`;
}
