"""The on-disk schema and its versioned migrations (``PRAGMA user_version``).

Only active facts are indexed in FTS5: triggers keep the index in step with ``facts.status``
so a lexical query never has to skip retired rows. Every change to what recall can see bumps
``meta.gen``, which invalidates in-process caches across processes; every change that can alter
a fact's vector entry also appends its id to ``index_log``, which in-process vector indexes
replay from their high-water mark.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: facts, FTS5 over active facts, vectors, meta, change log for undo.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('gen', '0');

    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active'
            CHECK (status IN ('active', 'superseded', 'forgotten')),
        run_id TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        task TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT 'extract',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        superseded_by INTEGER REFERENCES facts(id),
        why TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX facts_scope_status ON facts (scope, status, id);

    CREATE VIRTUAL TABLE facts_fts USING fts5(
        text, content='facts', content_rowid='id', tokenize='porter unicode61'
    );

    CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts (rowid, text)
            SELECT new.id, new.text WHERE new.status = 'active';
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'gen';
    END;
    CREATE TRIGGER facts_au AFTER UPDATE OF status, text ON facts BEGIN
        INSERT INTO facts_fts (facts_fts, rowid, text)
            SELECT 'delete', old.id, old.text WHERE old.status = 'active';
        INSERT INTO facts_fts (rowid, text)
            SELECT new.id, new.text WHERE new.status = 'active';
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'gen';
    END;

    CREATE TABLE vectors (
        fact_id INTEGER PRIMARY KEY REFERENCES facts(id),
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vec BLOB NOT NULL
    );
    CREATE TRIGGER vectors_ai AFTER INSERT ON vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'gen';
    END;
    CREATE TRIGGER vectors_ad AFTER DELETE ON vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'gen';
    END;

    CREATE TABLE changes (
        id INTEGER PRIMARY KEY,
        batch TEXT NOT NULL,
        at TEXT NOT NULL,
        scope TEXT NOT NULL,
        op TEXT NOT NULL,
        fact_id INTEGER NOT NULL REFERENCES facts(id),
        before_status TEXT,
        after_status TEXT NOT NULL,
        before_superseded_by INTEGER,
        before_why TEXT,
        run_id TEXT NOT NULL DEFAULT '',
        undone INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX changes_batch ON changes (batch);
    """,
    # 2: a log of every change that can alter a fact's vector entry, so an in-process vector
    # index loads only what changed since its high-water mark (``seq``) instead of everything.
    """
    CREATE TABLE index_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        fact_id INTEGER NOT NULL
    );
    CREATE TRIGGER index_log_facts AFTER UPDATE OF status, text, scope ON facts BEGIN
        INSERT INTO index_log (fact_id) VALUES (new.id);
    END;
    CREATE TRIGGER index_log_vectors_ai AFTER INSERT ON vectors BEGIN
        INSERT INTO index_log (fact_id) VALUES (new.fact_id);
    END;
    CREATE TRIGGER index_log_vectors_ad AFTER DELETE ON vectors BEGIN
        INSERT INTO index_log (fact_id) VALUES (old.fact_id);
    END;
    CREATE TRIGGER index_log_vectors_au AFTER UPDATE ON vectors BEGIN
        INSERT INTO index_log (fact_id) VALUES (old.fact_id);
        INSERT INTO index_log (fact_id) SELECT new.fact_id WHERE new.fact_id != old.fact_id;
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'gen';
    END;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
