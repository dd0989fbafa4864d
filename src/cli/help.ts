import { VERSION } from '../version';

/** The text of `--help`, per command and subcommand. */
export const HELP: Record<string, string> = {
  main: `rest-connector ${VERSION}

Usage:
  rest-connector outbound                 run the outbound connector (GET /api/datapoints, webhooks)
  rest-connector inbound                  run the inbound connector (POST /api/datapoints?topic=T)
  rest-connector config validate FILE     check a managed-settings file; exit 0, or 2 with every problem
  rest-connector config get --id ID       print connectors:{ID}:config; exit 1 when absent
  rest-connector config set --id ID FILE  validate FILE, then store it as connectors:{ID}:config
  rest-connector mappings test FILE --topic T PAYLOAD.json
                                          apply a topic's mappings to a payload; writes nothing
  rest-connector deadletter list --id ID [--webhook N] [--since T] [--json]
  rest-connector deadletter replay --id ID [--webhook N] [--since T]
  rest-connector deadletter purge --id ID [--webhook N] [--before T]
                                          the webhooks' backlogs (T: ISO 8601 or Unix seconds)
  rest-connector webhooks resend --id ID --webhook N --since T [--until T]
                                          send a past time range of process:updates again
  rest-connector webhooks render FILE --webhook N BATCH.json
                                          print the body webhook N of FILE would get (its format)
  rest-connector healthcheck              probe /health/live where the running connector listens
                                          (Http:AddressFile); exit 0 healthy, 1 not
  rest-connector help [COMMAND]           this text, or a command's (as COMMAND --help)
  rest-connector --version | --help       (each command and sub-command also takes --help)

Startup parameters come from ./appsettings.json and environment variables (see README).`,
  outbound: `Usage: rest-connector outbound

Runs the outbound connector: serves GET /api/datapoints and pushes every entry of
process:updates to the configured webhooks. Requires the startup parameter Id (env Id).
Exit status: 0 after SIGTERM/SIGINT or a valid configuration change, 2 on a startup error.`,
  inbound: `Usage: rest-connector inbound

Runs the inbound connector: POST /api/datapoints?topic=T applies the topic's mappings and
writes the data points atomically. Requires the startup parameter Id (env Id).
Exit status: 0 after SIGTERM/SIGINT or a valid configuration change, 2 on a startup error.`,
  'config validate': `Usage: rest-connector config validate FILE

Decodes FILE as managed settings (connectors:{ID}:config). Exit 0 when valid; otherwise
exit 2 and one line per problem, each naming its field (e.g. mappings[3].valuePath).`,
  'config get': `Usage: rest-connector config get --id ID

Prints the stored managed settings of connector ID. Exit 1 when the key is absent.
Connects with ConnectionStrings:Datastore (appsettings.json or ConnectionStrings__Datastore).`,
  'config set': `Usage: rest-connector config set --id ID FILE

Validates FILE, then writes it to connectors:{ID}:config (running connectors with that Id
restart on the change). Exit 2 when FILE is invalid; nothing is written then.`,
  'deadletter list': `Usage: rest-connector deadletter list --id ID [--webhook N] [--since T] [--json]

Lists the entries of connectors:{ID}:deadletter (the webhooks' backlogs), oldest first: ID,
webhook index, reason, attempts, webhook-id, points, URL, error. --json prints one JSON object per
line (every field and the entry's ID). T is ISO 8601 or Unix seconds.`,
  'deadletter replay': `Usage: rest-connector deadletter replay --id ID [--webhook N] [--since T]

Sends each selected entry once, now, to its webhook's current URL (from connectors:{ID}:config),
whatever its reason and the webhook's circuit, with its original webhook-id and a fresh signature;
deletes what was delivered. Prints "delivered N, failed M"; exit 1 when any failed.`,
  'deadletter purge': `Usage: rest-connector deadletter purge --id ID [--webhook N] [--before T]

Deletes the selected entries (all of them without --webhook and --before). Prints "purged N".`,
  'webhooks resend': `Usage: rest-connector webhooks resend --id ID --webhook N --since T [--until T]

Sends the entries of process:updates appended from --since to --until (default: now; T is ISO 8601
or Unix seconds) that match webhook N's filter again, in stream order, to its current URL with its
headers, signature, TLS and auth: at most Webhooks:BatchMaxSize points a request, body
{"datapoints":[…],"cause":"resend"} or the webhook's format (header Webhook-Cause: resend),
webhook-id r-{first}_{last}, each request tried up to
Webhooks:MaxAttempts times. Prints "sent N points in M requests, failed K"; exit 1 when any request
failed, 2 on bad arguments. It does not coordinate with a running connector.`,
  'webhooks render': `Usage: rest-connector webhooks render FILE --webhook N BATCH.json

Renders BATCH.json (an object {"datapoints":[…]}, and "cause" when you want one) with the format of
webhook N of the configuration FILE (CONTRACT 4.7) and prints the body, uncompressed, byte for byte.
A point without a timestamp gets no time in influx-line. Connects to nothing. Exit 0 (a note on
stderr when points were left out or there is nothing to send); 1 when it cannot be rendered (the
reason on stderr); 2 for bad arguments, an invalid FILE, or a BATCH.json that is not such an object.`,
  healthcheck: `Usage: rest-connector healthcheck

Reads the address file (startup parameter Http:AddressFile) that a running connector writes once it
listens, and asks /health/live there (2 s at most). Exit 0 when it answers 200; 1 when there is no
record, the process that wrote it is gone, or /health/live does not answer 200 (the reason on
stderr); 2 when Http:AddressFile is not set. The image's HEALTHCHECK runs the same check.`,
  'mappings test': `Usage: rest-connector mappings test FILE --topic T PAYLOAD.json

Applies the mappings of topic T in the settings FILE to the JSON object in PAYLOAD.json and
prints the data points that would be written (exit 0) or the 422 body (exit 1). Writes nothing.`,
};

/** The groups of sub-commands: `rest-connector config --help` lists its sub-commands (from the main text), each with its own --help. */
export const GROUPS = ['config', 'mappings', 'deadletter', 'webhooks'] as const;
for (const group of GROUPS) {
  const lines = HELP.main!.split('\n');
  const own: string[] = [];
  lines.forEach((line, i) => {
    if (!line.startsWith(`  rest-connector ${group} `)) return;
    own.push(line);
    // a description on the lines after it (indented further)
    for (let k = i + 1; k < lines.length && /^ {20,}\S/.test(lines[k]!); k++) own.push(lines[k]!);
  });
  HELP[group] = `Usage:\n${own.join('\n')}\n\nEach takes --help: rest-connector ${group} SUB-COMMAND --help.`;
}

