def slugify(title: str) -> str:
    return "-".join(title.split())
