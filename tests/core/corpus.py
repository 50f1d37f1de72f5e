"""Fake secrets in their real formats, each in the text an agent would send it in.

Every value here is made up (or a provider's documented example); none grants anything.
"""

from __future__ import annotations

from typing import NamedTuple


class Secret(NamedTuple):
    kind: str
    value: str
    # The value as an agent would send it: in a command, a config line, a header.
    text: str
    # Parts of the text that are not secret and must stay readable: the command, its account.
    kept: tuple[str, ...] = ()


def _secret(kind: str, value: str, text: str, *kept: str) -> Secret:
    return Secret(kind, value, text.replace("{}", value), kept)


PEM_BODY = (
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aFDrBz9vFqU4yc2ueC3B4Ph1LLHf1rBv0Q9bXwQq7UaYvRz3kP8mNcT5wLxHj2Gd\n"
    "t9Ek4Vb6Yn1Ra8Ws2Qp5Zx7Cm3Lo0Jf9Hu4Ig6Kd1Me8Nb3Vc5Xa2Sz7Ty0Pw4Ru"
)
OPENSSH_BODY = (
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACB7dWx0cmEtZmFrZS1rZXktZm9yLWFnZW50Ym9hcmQtdGVzdHMAAAAAAAA"
)
EC_BODY = "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oo3ivN0ZbJNYoAoGCCqGSM49AwEHoUQDQgAE"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

SECRETS: list[Secret] = [
    _secret("aws-key", "AKIAIOSFODNN7EXAMPLE", "export AWS_ACCESS_KEY_ID={}"),
    _secret("aws-key", "ASIAY34FZKBOKMUTVV7A", "aws configure set aws_access_key_id {}"),
    _secret(
        "aws-key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export AWS_SECRET_ACCESS_KEY={} && aws s3 ls",
    ),
    _secret(
        "aws-key",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        'aws_secret_access_key = "{}"',
    ),
    _secret(
        "github-token",
        "ghp_R7mKq2Xv9LbT4nWc8ZpY3sHj6DfG1aQe5Uo0",
        "git clone https://{}@github.com/acme/api.git",
    ),
    _secret(
        "github-token",
        "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234",
        "GH_TOKEN={} gh pr list",
    ),
    _secret("github-token", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "token: {}"),
    _secret(
        "gitlab-token",
        "glpat-xY3zAbCdEf9hIjKlMnOp",
        "git remote add origin https://oauth2:{}@gitlab.com/a/b",
    ),
    _secret(
        "slack-token",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        'curl -d "token={}" https://slack.com/api/chat.postMessage',
    ),
    _secret(
        "slack-token",
        "T024BE7LD/B08Q2L8JHNM/p9Lk2Jh7Gf4Ds1Az",
        'curl -X POST https://hooks.slack.com/services/{} -d \'{"text":"hi"}\'',
    ),
    _secret("stripe-key", "sk_live_51HqLyjWDarjtT1zdp7dcXYZabcdefGHIJKLmnopq", "STRIPE_KEY={}"),
    _secret(
        "stripe-key", "rk_live_4eC39HqLyjWDarjtT1zdp7dcABCD", "stripe --api-key {} charges list"
    ),
    _secret(
        "openai-key",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh",
        "OPENAI_API_KEY={} python run.py",
    ),
    _secret(
        "openai-key",
        "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",
        "openai.api_key = '{}'",
    ),
    _secret(
        "anthropic-key",
        "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-AbCdEfGhIjKlMnOp",
        "ANTHROPIC_API_KEY={} claude",
    ),
    _secret("google-key", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "maps?key={}&q=berlin"),
    _secret("jwt", JWT, "curl -H 'Authorization: Bearer {}' https://api.acme.dev/me"),
    _secret(
        "private-key",
        PEM_BODY,
        "cat > id_rsa <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n{}\n"
        "-----END RSA PRIVATE KEY-----\nEOF",
    ),
    _secret(
        "private-key",
        OPENSSH_BODY,
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    _secret(
        "private-key",
        EC_BODY,
        'key = """-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----"""',
    ),
    _secret("password", "Pg-s3cret-Passw0rd", "psql postgres://app:{}@db.internal:5432/app"),
    _secret("password", "R3dis-Pa55word!", "redis-cli -u redis://default:{}@cache:6379"),
    _secret("password", "hunter2-Correct-Horse", "PASSWORD={} ./deploy.sh"),
    _secret("password", "Tr0ub4dor&3", 'DB_PASSWORD="{}" docker compose up'),
    _secret("password", "mysql-Root-2024", "mysql -u root --password {} app < dump.sql"),
    _secret("password", "Winter2025!", '{"username": "ci", "password": "{}"}'),
    _secret("api-key", "a8f5f167f44f4964e6c998dee827110c", '{"api_key": "{}", "region": "eu"}'),
    _secret(
        "api-key", "c2VjcmV0LWFwaS1rZXktMTIzNDU2", "curl -H 'x-api-key: {}' https://api.acme.dev"
    ),
    _secret("secret", "8f14e45fceea167a5a36dedd4bea2543b1c9", "WEBHOOK_SECRET={}"),
    _secret("secret", "Qm9vdHN0cmFwLWNsaWVudC0yMDI0", '"client_secret": "{}",'),
    _secret("authorization", "mF_9.B5f-4.1JqM", "Authorization: Bearer {}"),
    _secret(
        "token",
        "4f9c1b7e2d8a6f3c5b0e9d1a7c2f8e4b6d3a",
        'headers = {"X-Upstream": "Bearer {}"}',
    ),
    _secret("authorization", "dXNlcjpwYXNzd29yZDEyMw==", "Authorization: Basic {}"),
    _secret(
        "high-entropy",
        "Zk8xQ2pWN2dUcjRtWXBMc0U5d0JhM3VOaA5",
        'config.load("{}")',
    ),
    _secret("high-entropy", "9fK2mQ7xL4vB8nR3tW6yZ1cD5hJ0sGpE", "echo {} | base64 -d"),
    _secret(
        "sendgrid-key",
        "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",
        "SENDGRID={}",
    ),
    _secret("twilio-key", "SK2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d", "twilio api:core --auth {}"),
    _secret(
        "npm-token",
        "npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2",
        "//registry.npmjs.org/:_authToken={}",
    ),
    _secret(
        "pypi-token",
        "pypi-AgEIcHlwaS5vcmcCJGI4ZjM0ZTU5LTQ3YjYtNDE1Zi1iNzM0LTQ1YTBhNjNhZmNiZAACKlszLCJmYjk0YzkzMy0",
        "twine upload -p {} dist/*",
    ),
    _secret("telegram-token", "5432109876:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", "BOT={}"),
    _secret(
        "azure-key",
        "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "DefaultEndpointsProtocol=https;AccountName=acme;{};EndpointSuffix=core.windows.net",
    ),
    _secret("huggingface-token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF_TOKEN={}"),
]

# Credentials on a command line, of vendors whose token has no format of its own: the secret
# goes, the command and the account stay readable.
COMMAND_LINE: list[Secret] = [
    _secret(
        "password",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "curl -X POST https://api.twilio.com/2010-04-01/Accounts.json"
        " -u ACa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6:{} --data-urlencode 'FriendlyName=ci'",
        "curl -X POST https://api.twilio.com/2010-04-01/Accounts.json -u ",
        " --data-urlencode 'FriendlyName=ci'",
    ),
    _secret(
        "password",
        "11e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7",
        "curl --user admin:{} -X POST https://ci.acme.dev/job/api/build",
        "curl --user admin:",
        " -X POST https://ci.acme.dev/job/api/build",
    ),
    _secret(
        "password",
        "ATATT3xFfGF0Zq7Lm2Pw9Xv4Kd8Rt3Yh6Jd5Fg0AbC",
        "curl -u dev@acme.dev:{} -H 'Accept: application/json' "
        "https://acme.atlassian.net/rest/api/3/myself",
        "curl -u dev@acme.dev:",
        " -H 'Accept: application/json' https://acme.atlassian.net/rest/api/3/myself",
    ),
    _secret(
        "password",
        "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
        "curl -s --user 'api:{}' https://api.mailgun.net/v3/mg.acme.dev/messages -F to=a@acme.dev",
        "curl -s --user 'api:",
        "' https://api.mailgun.net/v3/mg.acme.dev/messages -F to=a@acme.dev",
    ),
    _secret(
        "api-key",
        "api_6Zq7Lm2Pw9Xv4Kd8Rt3Yh6Jd5Fg0AbC",
        "curl -u {}: https://api.close.com/api/v1/me/",
        "curl -u ",
        ": https://api.close.com/api/v1/me/",
    ),
    _secret(
        "password",
        "Rg7kP2vQ9x-Wn4",
        "http -a ci:{} POST https://registry.acme.dev/api/tags name=v2",
        "http -a ci:",
        " POST https://registry.acme.dev/api/tags name=v2",
    ),
    _secret(
        "password",
        "S3cure_Db_2024",
        "mysql -h db.internal -u root -p{} app < dump.sql",
        "mysql -h db.internal -u root -p",
        " app < dump.sql",
    ),
    _secret(
        "password",
        "Deploy#Pw-7731",
        "sshpass -p '{}' ssh deploy@10.0.4.7 'systemctl restart api'",
        "sshpass -p '",
        "' ssh deploy@10.0.4.7 'systemctl restart api'",
    ),
    _secret(
        "password",
        "Rg9vKq2LmX7pT4wZ",
        "docker login -u ci-bot -p {} registry.acme.dev",
        "docker login -u ci-bot -p ",
        " registry.acme.dev",
    ),
    _secret(
        "password",
        "R3dis!Auth-42",
        "redis-cli -h cache.internal -a {} FLUSHALL",
        "redis-cli -h cache.internal -a ",
        " FLUSHALL",
    ),
    _secret(
        "password",
        "Str0ng!Sa-Pw-2024",
        "sqlcmd -S db.acme.dev -U sa -P '{}' -Q 'SELECT 1'",
        "sqlcmd -S db.acme.dev -U sa -P '",
        "' -Q 'SELECT 1'",
    ),
    _secret(
        "password",
        "0penssl-Backup-9",
        "openssl enc -aes-256-cbc -pass pass:{} -in backup.tar -out backup.enc",
        "openssl enc -aes-256-cbc -pass pass:",
        " -in backup.tar -out backup.enc",
    ),
    _secret(
        "authorization",
        "lin_api_Zq7Lm2Pw9Xv4Kd8Rt3Yh6Jd5Fg0AbC12eF",
        'curl -H "Authorization: {}" https://api.linear.app/graphql',
        'curl -H "Authorization: ',
        '" https://api.linear.app/graphql',
    ),
    _secret(
        "api-key",
        "7b3e9f1a2c4d6e8f0a1b3c5d7e9f2a4b",
        "curl -H 'DD-API-KEY: {}' https://api.datadoghq.com/api/v1/validate",
        "curl -H 'DD-API-KEY: ",
        "' https://api.datadoghq.com/api/v1/validate",
    ),
    _secret(
        "gitlab-token",
        "glpat-Zq7Lm2Pw9Xv4Kd8Rt3Yh",
        "curl --header 'PRIVATE-TOKEN: {}' https://gitlab.acme.dev/api/v4/projects",
        "curl --header 'PRIVATE-TOKEN: ",
        "' https://gitlab.acme.dev/api/v4/projects",
    ),
    _secret(
        "api-key",
        "4c8e2a6f0b3d7e1a5c9f3b7d1e5a9c2f",
        "curl -H 'Ocp-Apim-Subscription-Key: {}' https://api.cognitive.microsoft.com/bing/v7.0",
        "curl -H 'Ocp-Apim-Subscription-Key: ",
        "' https://api.cognitive.microsoft.com/bing/v7.0",
    ),
    _secret(
        "api-key",
        "pQ8vN3kR7tW2yZ5bX1cM",
        "SEGMENT_WRITE_KEY={} node track.js",
        "SEGMENT_WRITE_KEY=",
        " node track.js",
    ),
    _secret(
        "api-key",
        "3f9c1b7e2d8a6f3c5b0e9d1a7c2f8e4b",
        "export ALGOLIA_KEY={} && npm run index",
        "export ALGOLIA_KEY=",
        " && npm run index",
    ),
    _secret(
        "token",
        "Vc7Lm2Pw9Xv4Kd8Rt3Yh6Jd",
        "env VERCEL_TOKEN={} vercel deploy --prod",
        "env VERCEL_TOKEN=",
        " vercel deploy --prod",
    ),
    _secret(
        "api-key",
        "3b7e4f9a-2c1d-4e8f-a6b5-9d0c7e3f1a2b",
        "HEROKU_API_KEY={} heroku apps:info -a api",
        "HEROKU_API_KEY=",
        " heroku apps:info -a api",
    ),
    _secret(
        "digitalocean-token",
        "dop_v1_" + "4f9c1b7e2d8a6f3c5b0e9d1a7c2f8e4b" * 2,
        "doctl auth init -t {} --context ci",
        "doctl auth init -t ",
        " --context ci",
    ),
]
SECRETS += COMMAND_LINE

# What agents really write, with nothing secret in it: it must come through unchanged.
ORDINARY = [
    'pytest tests/api -k "not slow"',
    "python -m pytest tests/core/test_redaction.py -q",
    "git checkout 3f2a9c1b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    "git log --oneline 617af15..cddae2a",
    "git diff 3f2a9c1b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a -- dashboard/core/services.py",
    "docker run --rm -e RUN_ID=123e4567-e89b-12d3-a456-426614174000 app:latest",
    "sha256sum dist/app.tar.gz  # e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "npm install --save-dev @playwright/test@1.49.0",
    "ruff check dashboard/integrations/claude_code/hooks.py",
    "Update dashboard/core/services.py to use the new token_count=5 limit",
    "Add max_tokens=4096 to the request",
    "Fix the password reset flow",
    "Document the password: never commit it",
    "Add API key rotation to the settings page",
    "Rotate the secret keys every 90 days",
    "Reading the authentication middleware",
    "export PATH=$HOME/.local/bin:$PATH",
    "curl -s https://api.github.com/repos/acme/api/pulls?state=open",
    "ssh git@github.com -T",
    "password = request.POST['password']",
    'api_key = os.environ["API_KEY"]',
    "token = get_token(user)",
    '"password": "${DB_PASSWORD}"',
    "DATABASE_URL=postgres://app:${PGPASSWORD}@db:5432/app",
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "def check_password(self, raw_password: str) -> bool:",
    "SECRET_KEY = env('SECRET_KEY')",
    "Implement tests/e2e/test_inbox.py for the new layout",
    "kubectl rollout restart deployment/api-server-v2 -n production",
    "open http://localhost:8000/sessions/5b3f0c1e-7a7d-4f63-9c8e-2f1d9a0b6c11/",
    "mv src/components/HeaderNavigation.tsx src/components/layout/",
    "Running `pytest tests/api` · 40 s",
    "Use the Authorization header for the API",
    "grep -rn 'TODO' src/ | wc -l",
    "ls -la ~/.ssh/",
    "python manage.py migrate planmode 0004_permission_requests",
    "Investigate why tokenizer_v2 drops the last 512 tokens",
    # Options that look like a credential's and are not.
    "git push -u origin feature/login-page",
    "git push -u origin HEAD:refs/heads/main",
    "git branch -u origin/main",
    "docker run --rm -u 1000:1000 -v $PWD:/w -w /w python:3.11 make test",
    "docker run --user www-data:www-data nginx:1.27",
    "sort -u names.txt | uniq -c",
    "ssh -p 2222 deploy@10.0.4.7",
    "scp -P 2222 dist/app.tar.gz deploy@10.0.4.7:/srv/releases/",
    "rsync -a deploy:/srv/app/ ./backup",
    "python -u manage.py runserver 0.0.0.0:8000",
    "pytest -p no:cacheprovider tests/core",
    "mysql -h db.internal -u root -p app",
    "redis-cli -h cache.internal -p 6379 ping",
    'curl -u "$TWILIO_ACCOUNT_SID:$TWILIO_AUTH_TOKEN" https://api.twilio.com/2010-04-01/Accounts',
    'docker login -u ci-bot -p "$REGISTRY_TOKEN" registry.acme.dev',
    "SORT_KEY=name ./report.sh",
    "CACHE_KEY=v2_users_list_2024_archive",
    "S3_KEY=uploads/2024/03/report-2024-03-01.png",
    "IDEMPOTENCY_KEY=123e4567-e89b-12d3-a456-426614174000 ./retry.sh",
    'idempotency_key = "toolu_01Xq3N5dTodoWrite0001"',
]
