def area(width: float, height: float) -> float:
    return width * height


def perimeter(width: float, height: float) -> float
    return 2 * (width + height)
