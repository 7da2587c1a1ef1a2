from slug import slugify

assert slugify("Hello World") == "hello-world", slugify("Hello World")
assert slugify("  Many   spaces ") == "many-spaces"
print("all tests passed")
