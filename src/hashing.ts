/** Streaming SHA-256, shared by source verification, `run --verify` and `verify`. */
import { createHash } from "node:crypto";

export interface Digest {
  /** `sha256:<64 lowercase hex>` */
  sha256: string;
  size: number;
}

/** Hash a byte stream without holding it in memory. */
export async function digestStream(stream: AsyncIterable<Uint8Array | string>): Promise<Digest> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    hash.update(bytes);
    size += bytes.byteLength;
  }
  return { sha256: `sha256:${hash.digest("hex")}`, size };
}

/** `sha256:` + lowercase hex SHA-256 of `bytes`. */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}
