import click
@click.group()
def cli():
    """kineto-sql"""
