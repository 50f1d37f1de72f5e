// Agentboard for opencode: shows this opencode's sessions, subagents and todo lists on an
// Agentboard, sends its permission requests to the board's inbox and runs the board's
// continuation enforcer. Installed by `agentboard install-opencode`; needs AGENTBOARD_URL and
// AGENTBOARD_TOKEN in the environment opencode starts with.
//
// It never gets in opencode's way: events are sent in the background, in order, and when the
// board cannot be reached it says so once in opencode's log and carries on without it.

const BOARD = (process.env.AGENTBOARD_URL || "").replace(/\/+$/, "")
const TOKEN = process.env.AGENTBOARD_TOKEN || ""

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

export const AgentboardPlugin = async ({ client }) => {
  let failing = false
  const log = (level, message) =>
    client.app
      .log({ body: { service: "agentboard", level, message } })
      .catch(() => console.error(`agentboard: ${message}`))

  if (!BOARD || !TOKEN) {
    log("warn", "AGENTBOARD_URL and AGENTBOARD_TOKEN must be set; not reporting to Agentboard.")
    return {}
  }

  // POST one event; the board's answer, or {} when it could not be had.
  async function send(event, signal) {
    try {
      const response = await fetch(`${BOARD}/hooks/opencode`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body: JSON.stringify(event),
        signal,
      })
      const answer = await response.json().catch(() => ({}))
      if (!response.ok) {
        log("warn", `Agentboard refused a ${event.type} event: ${answer.error?.message || response.status}`)
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
    "tool.execute.before": async (input) => sawActivity(input.sessionID),
  }
}
