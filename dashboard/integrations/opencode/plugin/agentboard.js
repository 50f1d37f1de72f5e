// Agentboard for opencode: shows this opencode's sessions, subagents and todo lists on an
// Agentboard, sends its permission requests to the board's inbox, runs the board's
// continuation enforcer and carries what the team lead says from the board: a message put
// into the session (also an idle one), a stop that aborts it, a pause that holds its tool
// calls until a resume. Installed by `agentboard install-opencode`; needs AGENTBOARD_URL and
// AGENTBOARD_TOKEN in the environment opencode starts with.
//
// It never gets in opencode's way: events are sent in the background, in order, and when the
// board cannot be reached it says so once in opencode's log and carries on without it.
//
// Every request says which repository (its `origin` remote, without credentials) and which
// machine (the host name) the sessions run on, so the board can group them by project and
// machine; AGENTBOARD_REPORT_ORIGIN=0 in the environment keeps both to this machine.

import { randomUUID } from "node:crypto"
import { readFileSync, statSync } from "node:fs"
import { hostname } from "node:os"
import { dirname, join, resolve } from "node:path"

const BOARD = (process.env.AGENTBOARD_URL || "").replace(/\/+$/, "")
const TOKEN = process.env.AGENTBOARD_TOKEN || ""
const REPORT_ORIGIN = !["0", "false", "no", "off"].includes(
  (process.env.AGENTBOARD_REPORT_ORIGIN || "").trim().toLowerCase(),
)

// opencode's own events the board shows as they are.
const FORWARDED = new Set([
  "session.created",
  "session.updated",
  "session.deleted",
  "todo.updated",
  "session.error",
])
// oh-my-opencode runs a continuation enforcer of its own: two must never both continue an agent.
const OTHER_PLUGIN = /oh-my-open(code|agent)/i
const OTHER_DIRECTIVE = /^\s*\[SYSTEM DIRECTIVE: OH-MY-OPEN(AGENT|CODE)/
// The board answers a steering poll within 25 s; one it leaves unanswered longer is given up.
const POLL_TIMEOUT_MS = 60_000
// After a poll that failed (the board away, restarting), the next one waits this long.
const POLL_RETRY_MS = 5_000
// At most this many sessions are listened for (the newest).
const MAX_SESSIONS = 200

// --- where the sessions run: the same rules as the `agentboard hook` command ---------------

// A header carries latin-1 text: a value with anything else (a control character, a letter
// beyond latin-1) or too long for the board (which would cut it into another project) is
// left out rather than sent changed.
const SENDABLE = /^[\x20-\x7e\xa1-\xac\xae-\xff]+$/
function headerValue(value, limit) {
  const text = String(value || "").trim()
  return text && text.length <= limit && SENDABLE.test(text) ? text : null
}

// The git directory holding the configuration of the repository `start` is in. A worktree's
// (or submodule's) `.git` is a file naming its own git directory; a worktree's has a
// `commondir` file naming the main repository's, where the remotes live.
function gitDir(start) {
  let folder = resolve(start)
  for (;;) {
    const dotGit = join(folder, ".git")
    let found = null
    try {
      found = statSync(dotGit)
    } catch {}
    if (found?.isDirectory()) return dotGit
    if (found?.isFile()) {
      const text = readFileSync(dotGit, "utf8").trim()
      if (!text.startsWith("gitdir:")) return null
      const own = resolve(folder, text.slice("gitdir:".length).trim())
      try {
        return resolve(own, readFileSync(join(own, "commondir"), "utf8").trim())
      } catch {
        return own
      }
    }
    const parent = dirname(folder)
    if (parent === folder) return null
    folder = parent
  }
}

// A config value without its comment and quotes, with git's escapes read.
function configValue(raw) {
  let value = ""
  let quoted = false
  for (let index = 0; index < raw.length; index++) {
    const char = raw[index]
    if (char === "\\" && index + 1 < raw.length) {
      const next = raw[++index]
      value += { n: "\n", t: "\t", b: "\b" }[next] ?? next
    } else if (char === '"') quoted = !quoted
    else if ((char === "#" || char === ";") && !quoted) break
    else value += char
  }
  return value.trim()
}

// `remote.origin.url` from a git config file (its first value, the one git fetches from).
// `include` files and `insteadOf` rewrites are not followed: the URL as the repository has it.
const SECTION = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/
function originUrl(configText) {
  let inOrigin = false
  for (const raw of configText.split("\n")) {
    let line = raw.trim()
    if (line.startsWith("[")) {
      const section = SECTION.exec(line)
      if (!section) {
        inOrigin = false
        continue
      }
      const name = section[1].toLowerCase()
      const sub = section[2]
      inOrigin = (name === "remote" && sub === "origin") || (sub === undefined && name === "remote.origin")
      line = line.slice(section[0].length).trim() // `[remote "origin"] url = …` on one line
      if (!line) continue
    }
    const equals = line.indexOf("=")
    if (!inOrigin || equals < 0) continue
    if (line.slice(0, equals).trim().toLowerCase() === "url") return configValue(line.slice(equals + 1)) || null
  }
  return null
}

// The URL without a user name, password or token in a `scheme://` URL (and without its query
// and fragment, where tokens sometimes ride). The scp-like `git@host:path` stays as it is: its
// user is the ssh account every such URL names.
function withoutCredentials(url) {
  const schemeEnd = url.indexOf("://")
  if (schemeEnd < 0) return url
  const rest = url.slice(schemeEnd + 3).split(/[?#]/, 1)[0]
  const slash = rest.indexOf("/")
  const authority = slash < 0 ? rest : rest.slice(0, slash)
  const path = slash < 0 ? "" : rest.slice(slash)
  return `${url.slice(0, schemeEnd)}://${authority.slice(authority.lastIndexOf("@") + 1)}${path}`
}

// Whether the remote is on a server (`scheme://host/…` or git's scp-like `host:path`, a colon
// before any slash) rather than a folder on this machine, which names no shared project.
function namesASharedRepository(url) {
  if (url.includes("://")) return !url.toLowerCase().startsWith("file://")
  const colon = url.indexOf(":")
  return colon > 0 && !url.slice(0, colon).includes("/")
}

// The two headers for sessions in `directory`; read once, when opencode loads the plugin for
// that directory (its sessions all work there).
function whereHeaders(directory) {
  if (!REPORT_ORIGIN) return {}
  const headers = {}
  try {
    const found = gitDir(directory)
    const url = found && originUrl(readFileSync(join(found, "config"), "utf8"))
    const repository = url && namesASharedRepository(url) && headerValue(withoutCredentials(url), 300)
    if (repository) headers["X-Agentboard-Repository"] = repository
  } catch {} // no repository, or one that cannot be read: the board says "unknown"
  const host = headerValue(hostname(), 255)
  if (host) headers["X-Agentboard-Host"] = host
  return headers
}

export const AgentboardPlugin = async ({ client, directory, worktree }) => {
  let failing = false
  const log = (level, message) =>
    client.app
      .log({ body: { service: "agentboard", level, message } })
      .catch(() => console.error(`agentboard: ${message}`))

  if (!BOARD || !TOKEN) {
    log("warn", "AGENTBOARD_URL and AGENTBOARD_TOKEN must be set; not reporting to Agentboard.")
    return {}
  }
  const where = whereHeaders(directory || worktree || process.cwd())

  // POST one event; the board's answer, or {} when it could not be had.
  async function send(event, signal, path = "/hooks/opencode") {
    try {
      const response = await fetch(`${BOARD}${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...where },
        body: JSON.stringify(event),
        signal,
      })
      const answer = await response.json().catch(() => ({}))
      if (!response.ok) {
        log("warn", `Agentboard refused a ${event.type || "usage"} report: ${answer.error?.message || response.status}`)
        return {}
      }
      failing = false
      return answer
    } catch (error) {
      // An abort is ours (opencode answered a permission itself); anything else, a timeout
      // included, means the board is away.
      if (error?.name !== "AbortError" && !failing) {
        failing = true
        log("warn", `Agentboard at ${BOARD} cannot be reached (${error}); carrying on without it.`)
      }
      return {}
    }
  }

  // Events reach the board in the order opencode emitted them; held requests (the countdown,
  // a permission) wait for what came before them, but nothing waits for them.
  let queue = Promise.resolve()
  const post = (event) => (queue = queue.then(() => send(event, AbortSignal.timeout(10_000))))
  const hold = (event, signal) => queue.then(() => send(event, signal))

  const countdowns = new Map() // sessionID -> whether activity was reported during it
  const permissions = new Map() // opencode's request id -> AbortController of its held request
  const ownPrompts = new Set() // sessions our continuation prompt is on its way to
  const userMessages = new Set() // ids of user messages already reported
  const otherEnforcer = new Set() // sessions where the other enforcer was reported
  const toolCalls = new Map() // callID -> the last status of it reported
  const costed = new Set() // ids of assistant messages whose usage was reported
  const gated = new Set() // sessions whose budget is spent: each tool call asks the board first
  const sessions = new Set() // this opencode's sessions the board's word is listened for
  const paused = new Set() // sessions paused on the board: each tool call waits for a resume
  const refused = new Set() // callIDs refused for a pause: not steps (nor a loop) on the board
  let usageAnswered = Promise.resolve() // the last usage report's answer

  // What a complete assistant message cost (its tokens and opencode's own cost), once.
  function usage(info) {
    if (!info.time?.completed || costed.has(info.id)) return
    if (costed.size > 1000) costed.clear()
    costed.add(info.id)
    const report = {
      sessionID: info.sessionID,
      id: info.id,
      modelID: info.modelID || "",
      cost: info.cost || 0,
      tokens: info.tokens || {},
      completed: info.time.completed,
    }
    queue = queue.then(() => send(report, AbortSignal.timeout(10_000), "/hooks/opencode/usage"))
    usageAnswered = queue.then((answer) => {
      if (answer.gated) gated.add(info.sessionID)
    })
  }

  // A tool call about to run. In a session whose budget the board said is spent it waits for
  // the board's word: a refusal is thrown, and opencode hands its sentence to the model as the
  // call's error. Elsewhere it costs nothing but waiting for a usage report still on its way.
  async function gate(input) {
    if (!failing) await usageAnswered
    if (!gated.has(input.sessionID)) return
    const answer = await (queue = queue.then(() =>
      send(
        {
          type: "agentboard.gate",
          properties: { sessionID: input.sessionID, callID: input.callID, tool: input.tool },
        },
        AbortSignal.timeout(10_000),
      ),
    ))
    if (answer.refuse) throw new Error(answer.refuse)
    if (!failing) gated.delete(input.sessionID) // it runs again: stop asking
  }

  // --- what the lead says from the board ---------------------------------------------------
  // One long poll names every session (`POST /hooks/opencode/steering`): the board answers as
  // soon as something is queued for one of them, claimed there so that it is put into the
  // session once, or a pause began or ended. A session that appears while it waits gets a poll
  // of its own until the next round names it. A poll that fails is asked again a little later:
  // what was queued stays queued on the board until a poll claims it.
  let listening = null // the sessions the main poll names, while it runs

  function listen(sessionID) {
    if (!sessionID || sessions.has(sessionID)) return
    sessions.add(sessionID)
    if (sessions.size > MAX_SESSIONS) sessions.delete(sessions.values().next().value)
    if (listening) pollUntilNamed(sessionID)
    else pollAll()
  }

  function forget(sessionID) {
    sessions.delete(sessionID)
    paused.delete(sessionID)
  }

  // A poll keeps its name (`pollID`) until an answer reaches it: what the board claimed for a
  // poll whose answer was lost on the way is answered again to the retry, not lost.
  async function pollAll() {
    listening = new Set()
    let pollID = newPollID()
    while (sessions.size) {
      listening = new Set(sessions)
      if (await poll([...listening], pollID)) pollID = newPollID()
      else await sleep(POLL_RETRY_MS)
    }
    listening = null
  }

  async function pollUntilNamed(sessionID) {
    let pollID = newPollID()
    while (sessions.has(sessionID) && listening && !listening.has(sessionID)) {
      if (await poll([sessionID], pollID)) pollID = newPollID()
      else await sleep(POLL_RETRY_MS)
    }
  }

  const newPollID = () => randomUUID()

  const sleep = (ms) => new Promise((done) => setTimeout(done, ms).unref?.())

  // One poll and what it brought; false when the board gave no answer.
  async function poll(ids, pollID) {
    const answer = await send(
      {
        type: "agentboard.steering",
        sessionIDs: ids,
        paused: ids.filter((id) => paused.has(id)),
        pollID,
      },
      AbortSignal.timeout(POLL_TIMEOUT_MS),
      "/hooks/opencode/steering",
    )
    if (!Array.isArray(answer.said) || !Array.isArray(answer.paused)) return false
    for (const id of ids) {
      if (answer.paused.includes(id)) paused.add(id)
      else paused.delete(id)
    }
    for (const said of answer.said) await carry(said)
    return true
  }

  // Claimed on the board already: put into the session now, through opencode's own client.
  async function carry({ sessionID, messages = [], stop = null }) {
    if (stop) await stopSession(sessionID, stop)
    for (const text of messages) {
      await client.session
        // After a stop, the message waits in the session for its developer's next prompt.
        .promptAsync({ path: { id: sessionID }, body: { noReply: Boolean(stop), parts: [{ type: "text", text }] } })
        .catch((error) => log("warn", `Could not give session ${sessionID} a message from Agentboard: ${error}`))
    }
  }

  async function stopSession(sessionID, sentence) {
    log("warn", `${sentence} (session ${sessionID})`)
    client.tui
      .showToast({ body: { title: "Agentboard", message: sentence, variant: "warning", duration: 15_000 } })
      .catch(() => {})
    await client.session
      .abort({ path: { id: sessionID } })
      .catch((error) => log("warn", `Could not stop session ${sessionID}: ${error}`))
  }

  // A tool call of a paused session waits for the board's word (`POST /hooks/opencode/paused`):
  // a resume lets it run; a refusal (the wait ran out) or a stop is thrown, and opencode hands
  // its sentence to the model as the call's error.
  async function heldWhilePaused(input) {
    if (!paused.has(input.sessionID)) return
    const answer = await queue.then(() =>
      send(
        {
          type: "agentboard.paused",
          sessionID: input.sessionID,
          callID: input.callID,
          tool: input.tool,
        },
        undefined,
        "/hooks/opencode/paused",
      ),
    )
    if (answer.stop || answer.refuse) {
      if (refused.size > 1000) refused.clear()
      refused.add(input.callID)
    }
    if (answer.stop) {
      stopSession(input.sessionID, answer.stop)
      throw new Error(answer.stop)
    }
    if (answer.refuse) throw new Error(answer.refuse)
    if (!failing) paused.delete(input.sessionID)
  }

  // Asked once the first session exists: asking while opencode loads its plugins would wait
  // for this very plugin.
  let otherPlugin
  const otherPluginConfigured = async () => {
    otherPlugin ??= client.config
      .get()
      .then(({ data }) => (data?.plugin || []).some((name) => OTHER_PLUGIN.test(String(name))))
      .catch(() => false)
    return otherPlugin
  }
  const reportOtherEnforcer = (sessionID) => {
    if (otherEnforcer.has(sessionID)) return
    otherEnforcer.add(sessionID)
    post({ type: "agentboard.other_enforcer", properties: { sessionID, name: "oh-my-opencode" } })
  }

  const activity = (sessionID, kind) =>
    post({ type: "agentboard.activity", properties: { sessionID, kind } })

  async function idle(event) {
    const sessionID = event.properties.sessionID
    if (countdowns.has(sessionID)) return
    countdowns.set(sessionID, false)
    const answer = await hold(event)
    countdowns.delete(sessionID)
    if (!answer.continue) return
    ownPrompts.add(sessionID)
    await client.session
      .promptAsync({ path: { id: sessionID }, body: { parts: [{ type: "text", text: answer.continue }] } })
      .catch((error) => log("warn", `Could not continue session ${sessionID}: ${error}`))
  }

  async function permission(event) {
    const id = event.properties.id
    const controller = new AbortController()
    permissions.set(id, controller)
    const answer = await hold(event, controller.signal)
    if (!permissions.delete(id) || !answer.reply) return // answered in opencode, or undecided
    const body = { reply: answer.reply }
    if (answer.message) body.message = answer.message
    await client._client
      .post({
        url: "/permission/{requestID}/reply",
        path: { requestID: id },
        body,
        headers: { "Content-Type": "application/json" },
      })
      .catch((error) => log("warn", `Could not answer permission request ${id}: ${error}`))
  }

  // A tool call starting or ending is a step on the board. Long texts in its input are cut
  // (the board only summarises and hashes it; a huge write must not be refused for its size).
  const shortened = (value, depth = 0) => {
    if (typeof value === "string") return value.length > 4000 ? value.slice(0, 4000) : value
    if (depth > 3 || value === null || typeof value !== "object") return value
    if (Array.isArray(value)) return value.slice(0, 50).map((item) => shortened(item, depth + 1))
    return Object.fromEntries(
      Object.entries(value).slice(0, 50).map(([key, item]) => [key, shortened(item, depth + 1)]),
    )
  }
  function toolPart(part) {
    const status = part.state?.status
    if (!["running", "completed", "error"].includes(status) || !part.callID) return
    if (refused.has(part.callID)) return
    if (toolCalls.get(part.callID) === status) return
    if (toolCalls.size > 1000) toolCalls.clear()
    toolCalls.set(part.callID, status)
    post({
      type: "agentboard.tool",
      properties: {
        sessionID: part.sessionID,
        callID: part.callID,
        tool: part.tool,
        status,
        input: shortened(part.state.input),
        error: typeof part.state.error === "string" ? part.state.error.slice(0, 1000) : null,
        // A command's exit code: bash ends "completed" whatever its command exited with.
        exit: Number.isInteger(part.state.metadata?.exit) ? part.state.metadata.exit : null,
      },
    })
  }

  function sawActivity(sessionID) {
    if (countdowns.get(sessionID) === false) {
      countdowns.set(sessionID, true)
      activity(sessionID, "step")
    }
  }

  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      const sessionID = props.sessionID || props.info?.sessionID
      if (FORWARDED.has(event.type)) post(event)
      if (event.type === "session.created" || event.type === "session.updated") listen(props.info?.id)
      if (event.type === "session.deleted") forget(props.info?.id)
      if (event.type === "session.created") {
        otherPluginConfigured().then((found) => found && reportOtherEnforcer(props.info.id))
      }
      if (event.type === "session.idle") idle(event)
      if (event.type === "permission.asked") permission(event)
      if (event.type === "permission.replied") {
        // Answered in opencode itself: the board stops waiting (and shows it expired).
        permissions.get(props.requestID)?.abort()
        permissions.delete(props.requestID)
      }
      if (event.type === "message.updated" && props.info?.role === "user") {
        if (userMessages.has(props.info.id)) return
        userMessages.add(props.info.id)
        if (ownPrompts.delete(sessionID)) return
        activity(sessionID, "prompt")
      }
      if (event.type === "message.updated" && props.info?.role === "assistant") usage(props.info)
      if (event.type === "message.part.updated" && props.part?.type === "tool") toolPart(props.part)
      if (event.type === "message.part.updated" && props.part?.type === "text") {
        if (OTHER_DIRECTIVE.test(props.part.text || "")) reportOtherEnforcer(props.part.sessionID)
      }
      if (
        event.type === "message.part.updated" ||
        (event.type === "message.updated" && props.info?.role === "assistant") ||
        (event.type === "session.status" && props.status?.type === "busy")
      ) {
        sawActivity(sessionID || props.part?.sessionID)
      }
    },
    "tool.execute.before": async (input) => {
      sawActivity(input.sessionID)
      await heldWhilePaused(input)
      await gate(input)
    },
  }
}
