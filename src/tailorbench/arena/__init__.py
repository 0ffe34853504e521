"""`tailor arena`: a first-person personalization arena (docs/arena.md). People answer a profile
questionnaire, ask their own question (or take one from a pool), read two anonymous answers streamed side by
side — from contestants that may be the same model with and without their profile — and vote; the votes become a
Bradley-Terry leaderboard (`ratings.py`, `voters.py`), a native pairwise benchmark and a third-person annotation
project (`export.py`, `third_person.py`).

Modules: `config` (arena.yaml), `tables` + `migrations` + `store` (the database: participants, questions,
battles, votes, flags, exports, its own Alembic chain), `answers` (the streaming adapter over the one Model
wrapper), `battles` (pairing, prompts, generation), `web/` (the participant's pages), `leaderboard`, `privacy`
(pseudonyms, deletion with receipt), `simulate` (persona participants over HTTP) and `demo`.
"""

from __future__ import annotations

#: the config file in ARENA_DIR
CONFIG_FILE = "arena.yaml"
#: the default SQLite database in ARENA_DIR
DB_FILENAME = "arena.sqlite"
#: the folder the leaderboard is written to, inside ARENA_DIR
LEADERBOARD_DIR = "leaderboard"
