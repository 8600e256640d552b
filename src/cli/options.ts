/** Options that several commands share, parsed the same way everywhere. */
import { InvalidArgumentError, Option } from "commander";

/**
 * A value that must not be empty: `--config ""` would otherwise fall back to
 * the default file and `--source ""` to the config's source, each doing
 * something other than what was typed.
 */
export function nonEmpty(value: string): string {
  if (value === "") throw new InvalidArgumentError("it must not be empty");
  return value;
}

export function configOption(): Option {
  return new Option(
    "--config <file>",
    "config file (default: $DISTRIBUTOR_CONFIG or ./distributor.yaml)",
  ).argParser(nonEmpty);
}
