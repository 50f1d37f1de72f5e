"""opencode on the board: the Agentboard plugin for opencode (`plugin/agentboard.js`), what it
sends (`schemas`), the endpoint that takes it (`views`) and its installer (`install`)."""
