/** One `switchboard` subcommand. */
export interface CliCommand {
  name: string;
  summary: string;
  /** Full help: every flag, shown by `switchboard <command> --help`. */
  usage: string;
  /** Runs the command; resolves with the process exit code. */
  run(argv: string[]): Promise<number>;
}
